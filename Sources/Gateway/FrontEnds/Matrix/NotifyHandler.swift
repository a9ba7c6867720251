import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import Logging
import NIOCore
import Pushkins

/// `POST /_matrix/push/v1/notify`.
///
/// Devices are dispatched concurrently (grouped by pushkin, so a batching provider sees its
/// devices together) and every device gets an outcome; one failure never discards the others.
///
/// Status: 200 `{"rejected": [...]}` when every device was delivered, rejected, skipped or
/// dropped for good. When any device *failed* (upstream unavailable, retry budget spent,
/// in-flight limit), the answer is 502 so that the homeserver retries the request; the body then
/// still carries the rejections already known, `{"errcode": "M_UNKNOWN", "error": …,
/// "rejected": [...]}`. A 400 only ever means a body that can never succeed.
package struct NotifyHandler: Sendable {
    let router: AppIdRouter
    let limits: [String: InflightLimit]
    let metrics: GatewayMetrics
    let logger: Logger
    /// Requests in progress on this handler (a reload waits for them before closing old pushkins).
    let inFlight = AtomicCounter()

    init(router: AppIdRouter, limits: [String: InflightLimit], metrics: GatewayMetrics, logger: Logger) {
        self.router = router
        self.limits = limits
        self.metrics = metrics
        self.logger = logger
    }

    /// The `{"rejected": […]}` answer, or the `NotifyError` to answer instead.
    func handle(_ request: ServerRequest) async throws(NotifyError) -> ServerResponse {
        let start = ContinuousClock.now
        inFlight.add(1)
        metrics.requestsInFlight.record(metrics.inFlightCount.add(1))
        defer {
            metrics.requestsInFlight.record(metrics.inFlightCount.add(-1))
            inFlight.add(-1)
        }
        do {
            let response = try await process(request)
            metrics.notifyFinished(code: Int(response.status.code), duration: ContinuousClock.now - start)
            return response
        } catch {
            metrics.notifyFinished(code: Int(error.status.code), duration: ContinuousClock.now - start)
            throw error
        }
    }

    private func process(_ request: ServerRequest) async throws(NotifyError) -> ServerResponse {
        let requestId = request.requestId
        var logger = self.logger
        logger[metadataKey: "request_id"] = .string(requestId)

        let notification: PushNotification
        do {
            notification = try NotificationParser.parse(body: request.body.readableBytesView)
        } catch {
            logger.info("Invalid notify request", metadata: ["error": "\(error.message)"])
            switch error {
            case .notJSON: throw .notJSON(error.message)
            case .invalid: throw .badJSON(error.message)
            }
        }
        metrics.notificationsReceived.increment()
        metrics.devicesReceived.increment(by: Int64(notification.devices.count))

        let outcomes = await dispatch(notification, logger: logger)
        var rejected: [String] = []
        var failures: [OutcomeReason] = []
        for (device, outcome) in zip(notification.devices, outcomes) {
            switch outcome {
            case .rejected: rejected.append(device.pushkey)
            case .failed(let reason): failures.append(reason)
            case .delivered, .skipped, .dropped: break
            }
        }
        if let first = failures.first {
            throw .dispatchFailed(count: failures.count, first: first, rejected: rejected)
        }
        return .json(.ok, ["rejected": .array(rejected.map(JSONValue.string))])
    }

    /// One outcome per device, in request order.
    private func dispatch(_ notification: PushNotification, logger: Logger) async -> [DeviceOutcome] {
        var outcomes = [DeviceOutcome?](repeating: nil, count: notification.devices.count)
        var groups: [(pushkin: any Pushkin, indices: [Int])] = []
        for (index, device) in notification.devices.enumerated() {
            switch router.route(device.appId) {
            case .unknown:
                logger.info("Unknown app ID", metadata: ["app_id": "\(device.appId)"])
                outcomes[index] = .rejected(reason: .unknownAppId)
            case .ambiguous(let keys):
                logger.info("Ambiguous app ID", metadata: ["app_id": "\(device.appId)", "matches": "\(keys)"])
                outcomes[index] = .rejected(reason: .ambiguousAppId)
            case .pushkin(let pushkin):
                metrics.dispatched(pushkin: pushkin.name)
                if let g = groups.firstIndex(where: { $0.pushkin.name == pushkin.name }) {
                    groups[g].indices.append(index)
                } else {
                    groups.append((pushkin, [index]))
                }
            }
        }
        // `inflight_request_limit` bounds concurrency without making a large request impossible:
        // the slots free when this request arrives are its own, and its devices beyond them wait for
        // them (dispatched in waves). Only when other requests hold every slot is the app shed.
        var slots: [String: Int] = [:]
        groups = groups.filter { group in
            guard let limit = limits[group.pushkin.name] else { return true }
            let granted = limit.acquire(upTo: group.indices.count)
            guard granted > 0 else {
                for index in group.indices {
                    metrics.inflightDrop(pushkin: group.pushkin.name)
                    outcomes[index] = .failed(reason: .inflightLimit)
                }
                return false
            }
            slots[group.pushkin.name] = granted
            return true
        }

        let context = DispatchContext(logger: logger)
        let results: [(indices: [Int], outcomes: [DeviceOutcome])]
        if groups.count == 1, let only = groups.first {
            results = [(only.indices, await run(only.pushkin, notification, only.indices, slots[only.pushkin.name], context))]
        } else {
            results = await withTaskGroup(of: ([Int], [DeviceOutcome]).self) { group in
                for (pushkin, indices) in groups {
                    let granted = slots[pushkin.name]
                    group.addTask { (indices, await self.run(pushkin, notification, indices, granted, context)) }
                }
                var collected: [([Int], [DeviceOutcome])] = []
                for await result in group { collected.append(result) }
                return collected.map { (indices: $0.0, outcomes: $0.1) }
            }
        }
        for (indices, groupOutcomes) in results {
            for (index, outcome) in zip(indices, groupOutcomes) { outcomes[index] = outcome }
        }
        return outcomes.enumerated().map { index, outcome in
            let device = notification.devices[index]
            let result = outcome ?? .failed(reason: .localError("not dispatched"))
            log(result, device: device, logger: logger)
            return result
        }
    }

    /// Dispatches one app's devices, at most `slots` at a time (all at once without a limit), and
    /// frees the slots.
    private func run(_ pushkin: any Pushkin, _ notification: PushNotification, _ indices: [Int], _ slots: Int?, _ context: DispatchContext)
        async -> [DeviceOutcome]
    {
        let devices = indices.map { notification.devices[$0] }
        let wave = max(1, slots ?? devices.count)
        var outcomes: [DeviceOutcome] = []
        outcomes.reserveCapacity(devices.count)
        for start in stride(from: 0, to: devices.count, by: wave) {
            let chunk = Array(devices[start..<min(start + wave, devices.count)])
            outcomes += await pushkin.dispatch(notification, devices: chunk, context: context)
        }
        if let slots { limits[pushkin.name]?.release(count: slots) }
        for outcome in outcomes { metrics.count(outcome, pushkin: pushkin.name) }
        return outcomes
    }

    /// The metadata is built only when a line is written (a delivered device logs at debug level).
    private func log(_ outcome: DeviceOutcome, device: Device, logger: Logger) {
        var metadata: Logger.Metadata {
            [
                "app_id": "\(device.appId)", "pushkey": "\(Redaction.pushkey(device.pushkey))", "outcome": "\(outcome.label)",
                "reason": "\(outcome.reason?.label ?? "")", "detail": "\(outcome.reason.map(String.init(describing:)) ?? "")",
            ]
        }
        switch outcome {
        case .delivered, .skipped: logger.debug("Device dispatched", metadata: metadata)
        case .rejected, .dropped:
            guard let suppressed = LogThrottle.perDevice.admit("Device dispatched") else { return }
            logger.info(
                "Device dispatched",
                metadata: suppressed > 0 ? metadata.merging(["similar_lines_suppressed": "\(suppressed)"]) { $1 } : metadata)
        case .failed:
            guard let suppressed = LogThrottle.perDevice.admit("Device dispatch failed") else { return }
            logger.warning(
                "Device dispatch failed",
                metadata: suppressed > 0 ? metadata.merging(["similar_lines_suppressed": "\(suppressed)"]) { $1 } : metadata)
        }
    }
}
