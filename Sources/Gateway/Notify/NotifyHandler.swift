import Foundation
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
public struct NotifyHandler: Sendable {
    let router: AppRouter
    let limits: [String: InflightLimit]
    let metrics: GatewayMetrics
    let logger: Logger

    public init(router: AppRouter, limits: [String: InflightLimit], metrics: GatewayMetrics, logger: Logger) {
        self.router = router
        self.limits = limits
        self.metrics = metrics
        self.logger = logger
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let start = ContinuousClock.now
        metrics.requestsInFlight.record(metrics.inFlightCount.add(1))
        let response = await process(request)
        metrics.requestsInFlight.record(metrics.inFlightCount.add(-1))
        metrics.notifyFinished(code: Int(response.status.code), seconds: (ContinuousClock.now - start).seconds)
        return response
    }

    private func process(_ request: HTTPRequest) async -> HTTPResponse {
        let requestId = UUID().uuidString.lowercased()
        var logger = self.logger
        logger[metadataKey: "request_id"] = "\(requestId)"

        let notification: PushNotification
        do {
            notification = try NotificationParser.parse(body: request.body.readableBytesView)
        } catch {
            logger.info("Invalid notify request", metadata: ["error": "\(error.message)"])
            switch error {
            case .notJSON: return .matrixError(.badRequest, "M_NOT_JSON", error.message)
            case .invalid: return .matrixError(.badRequest, "M_BAD_JSON", error.message)
            }
        }
        metrics.notificationsReceived.increment()
        metrics.devicesReceived.increment(by: Int64(notification.devices.count))

        let outcomes = await dispatch(notification, logger: logger)
        var rejected: [JSONValue] = []
        var failures: [String] = []
        for (device, outcome) in zip(notification.devices, outcomes) {
            switch outcome {
            case .rejected: rejected.append(.string(device.pushkey))
            case .failed(let reason): failures.append(reason)
            default: break
            }
        }
        if failures.isEmpty {
            return .json(.ok, ["rejected": .array(rejected)])
        }
        return .json(
            .badGateway,
            [
                "errcode": "M_UNKNOWN", "error": .string("Failed to dispatch to \(failures.count) device(s): \(failures[0])"),
                "rejected": .array(rejected),
            ])
    }

    /// One outcome per device, in request order.
    private func dispatch(_ notification: PushNotification, logger: Logger) async -> [DeviceOutcome] {
        var outcomes = [DeviceOutcome?](repeating: nil, count: notification.devices.count)
        var groups: [(pushkin: any Pushkin, indices: [Int])] = []
        for (index, device) in notification.devices.enumerated() {
            switch router.route(device.appId) {
            case .unknown:
                logger.info("Unknown app ID", metadata: ["app_id": "\(device.appId)"])
                outcomes[index] = .rejected(reason: "unknown app id")
            case .ambiguous(let keys):
                logger.info("Ambiguous app ID", metadata: ["app_id": "\(device.appId)", "matches": "\(keys)"])
                outcomes[index] = .rejected(reason: "ambiguous app id")
            case .pushkin(let pushkin):
                metrics.dispatched(pushkin: pushkin.name)
                if limits[pushkin.name]?.acquire() == false {
                    metrics.inflightDrop(pushkin: pushkin.name)
                    outcomes[index] = .failed(reason: "too many requests in flight for \(pushkin.name)")
                    continue
                }
                if let g = groups.firstIndex(where: { $0.pushkin.name == pushkin.name }) {
                    groups[g].indices.append(index)
                } else {
                    groups.append((pushkin, [index]))
                }
            }
        }

        let context = DispatchContext(requestId: logger[metadataKey: "request_id"].map { "\($0)" } ?? "", logger: logger)
        let results: [(indices: [Int], outcomes: [DeviceOutcome])]
        if groups.count == 1, let only = groups.first {
            results = [(only.indices, await run(only.pushkin, notification, only.indices, context))]
        } else {
            results = await withTaskGroup(of: ([Int], [DeviceOutcome]).self) { group in
                for (pushkin, indices) in groups {
                    group.addTask { (indices, await self.run(pushkin, notification, indices, context)) }
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
            let result = outcome ?? .failed(reason: "not dispatched")
            log(result, device: device, logger: logger)
            return result
        }
    }

    private func run(_ pushkin: any Pushkin, _ notification: PushNotification, _ indices: [Int], _ context: DispatchContext) async
        -> [DeviceOutcome]
    {
        let devices = indices.map { notification.devices[$0] }
        let outcomes = await pushkin.dispatch(notification, devices: devices, context: context)
        limits[pushkin.name]?.release(count: devices.count)
        for outcome in outcomes { metrics.outcome(outcome.label, pushkin: pushkin.name) }
        return outcomes
    }

    private func log(_ outcome: DeviceOutcome, device: Device, logger: Logger) {
        let metadata: Logger.Metadata = [
            "app_id": "\(device.appId)", "pushkey": "\(Redaction.pushkey(device.pushkey))", "outcome": "\(outcome.label)",
            "reason": "\(outcome.reason ?? "")",
        ]
        switch outcome {
        case .delivered, .skipped: logger.debug("Device dispatched", metadata: metadata)
        case .rejected, .dropped: logger.info("Device dispatched", metadata: metadata)
        case .failed: logger.warning("Device dispatch failed", metadata: metadata)
        }
    }
}

/// `inflight_request_limit`: concurrent device dispatches allowed per app.
public final class InflightLimit: Sendable {
    public let limit: Int
    private let count = AtomicCounter()

    public init(limit: Int) { self.limit = limit }

    func acquire() -> Bool { count.increment(ifBelow: limit) }
    func release(count n: Int) { count.add(-n) }
}
