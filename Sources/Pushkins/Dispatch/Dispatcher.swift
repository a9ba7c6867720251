import HeraldCore
import HeraldUpstream
import Logging

/// The one path from devices to outcomes, for every front end (docs/architecture.md, "Dispatch"):
/// routing by app id, `inflight_request_limit`, grouping by pushkin, the bounded fan-out, the
/// outcome metrics and the per-device log line.
///
/// Matrix's notify and `herald send-test` hand it a notification whose devices it routes by app id
/// (`dispatch(_:logger:)`). Status, gorush and ADAMANT address their pushkin themselves and hand it
/// one job per device (`deliver(_:limit:logger:_:)`).
package struct Dispatcher: Sendable {
    package let router: AppIdRouter
    private let limits: [String: InflightLimit]
    private let counters: CounterCache

    /// `inflightLimits`: `inflight_request_limit` per app key. The per-app series are made at 0,
    /// so that dashboards see them before the first event.
    package init(pushkins: [any Pushkin], inflightLimits: [String: Int] = [:], counters: CounterCache) {
        router = AppIdRouter(pushkins: pushkins)
        var limits: [String: InflightLimit] = [:]
        for pushkin in pushkins {
            if let limit = inflightLimits[pushkin.name] { limits[pushkin.name] = InflightLimit(limit: limit) }
            for label in ["sygnal_inflight_request_limit_drop_total", "herald_rejected_pushkeys_total", "herald_failed_devices_total"] {
                _ = counters.counter(label, [("pushkin", pushkin.name)])
            }
        }
        self.limits = limits
        self.counters = counters
    }

    // MARK: routed by app id

    /// One outcome per device of `notification`, in its order. Devices are grouped by pushkin (a
    /// batching provider sees its devices together) and the groups run concurrently.
    ///
    /// `inflight_request_limit` bounds concurrency without making a large request impossible: the
    /// slots free when this request arrives are its own, and its devices beyond them wait for them
    /// (dispatched in waves). Only when other requests hold every slot is the app shed.
    package func dispatch(_ notification: PushNotification, logger: Logger) async -> [DeviceOutcome] {
        var outcomes = [DeviceOutcome?](repeating: nil, count: notification.devices.count)
        var groups: [Group] = []
        for (index, device) in notification.devices.enumerated() {
            switch router.route(device.appId) {
            case .unknown:
                logger.info("Unknown app ID", metadata: ["app_id": "\(device.appId)"])
                outcomes[index] = .rejected(reason: .unknownAppId)
            case .ambiguous(let keys):
                logger.info("Ambiguous app ID", metadata: ["app_id": "\(device.appId)", "matches": "\(keys)"])
                outcomes[index] = .rejected(reason: .ambiguousAppId)
            case .pushkin(let pushkin):
                counters.increment("sygnal_per_pushkin_type_total", [("pushkin", pushkin.name)])
                if let g = groups.firstIndex(where: { $0.pushkin.name == pushkin.name }) {
                    groups[g].indices.append(index)
                } else {
                    groups.append(Group(pushkin: pushkin, indices: [index]))
                }
            }
        }
        groups = groups.compactMap { group in
            guard let limit = limits[group.pushkin.name] else { return group }
            let granted = limit.acquire(upTo: group.indices.count)
            guard granted > 0 else {
                for index in group.indices {
                    counters.increment("sygnal_inflight_request_limit_drop_total", [("pushkin", group.pushkin.name)])
                    outcomes[index] = .failed(reason: .inflightLimit)
                }
                return nil
            }
            var admitted = group
            admitted.slots = granted
            return admitted
        }

        let context = DispatchContext(logger: logger)
        let results = await fanOut(groups, notStarted: []) { group in
            await self.run(group, notification, context)
        }
        for (group, groupOutcomes) in zip(groups, results) {
            for (index, outcome) in zip(group.indices, groupOutcomes) { outcomes[index] = outcome }
        }
        return outcomes.enumerated().map { index, outcome in
            let device = notification.devices[index]
            let result = outcome ?? .failed(reason: .localError("not dispatched"))
            log(result, app: device.appId, token: device.pushkey, logger: logger)
            return result
        }
    }

    /// The devices of one request that route to one pushkin.
    private struct Group: Sendable {
        var pushkin: any Pushkin
        var indices: [Int]
        /// The `inflight_request_limit` slots this request holds for them; nil without a limit.
        var slots: Int?
    }

    /// Dispatches one group, at most `slots` devices at a time (all at once without a limit), and
    /// frees the slots.
    private func run(_ group: Group, _ notification: PushNotification, _ context: DispatchContext) async -> [DeviceOutcome] {
        let devices = group.indices.map { notification.devices[$0] }
        let wave = max(1, group.slots ?? devices.count)
        var outcomes: [DeviceOutcome] = []
        outcomes.reserveCapacity(devices.count)
        for start in stride(from: 0, to: devices.count, by: wave) {
            let chunk = Array(devices[start..<min(start + wave, devices.count)])
            outcomes += await group.pushkin.dispatch(notification, devices: chunk, context: context)
        }
        if let slots = group.slots { limits[group.pushkin.name]?.release(count: slots) }
        for outcome in outcomes { count(outcome, pushkin: group.pushkin.name) }
        return outcomes
    }

    // MARK: addressed by the front end

    /// What became of one job of `deliver`: the outcome, the pushkin it went through (nil when
    /// none could take it) and the device token, for the metrics and the log line.
    package struct Delivery: Sendable {
        package var outcome: DeviceOutcome
        package var pushkin: String?
        package var token: String

        package init(_ outcome: DeviceOutcome, pushkin: String?, token: String) {
            self.outcome = outcome
            self.pushkin = pushkin
            self.token = token
        }
    }

    /// A job whose task was cancelled before it started.
    private static let notStarted = Delivery(.failed(reason: .localError("cancelled before dispatch")), pushkin: nil, token: "")

    /// Runs `send` for every job, at most `limit` at once (all at once when nil), counts and logs
    /// each outcome as `dispatch` does, and returns the outcomes in job order.
    package func deliver<Job: Sendable>(
        _ jobs: [Job], limit: Int? = nil, logger: Logger, _ send: @escaping @Sendable (Job) async -> Delivery
    ) async -> [DeviceOutcome] {
        await fanOut(jobs, limit: limit, notStarted: Self.notStarted, send).map { delivery in
            if let pushkin = delivery.pushkin { count(delivery.outcome, pushkin: pushkin) }
            log(delivery.outcome, app: delivery.pushkin ?? "", token: delivery.token, logger: logger)
            return delivery.outcome
        }
    }

    // MARK: metrics and log

    /// `herald_device_outcomes_total{pushkin,outcome,reason}`, and the rejected and failed counters
    /// operators alert on.
    private func count(_ outcome: DeviceOutcome, pushkin: String) {
        counters.increment(
            "herald_device_outcomes_total", [("pushkin", pushkin), ("outcome", outcome.label), ("reason", outcome.reason?.label ?? "")])
        switch outcome {
        case .rejected: counters.increment("herald_rejected_pushkeys_total", [("pushkin", pushkin)])
        case .failed: counters.increment("herald_failed_devices_total", [("pushkin", pushkin)])
        case .delivered, .skipped, .dropped: break
        }
    }

    /// The metadata is built only when a line is written (a delivered device logs at debug level).
    private func log(_ outcome: DeviceOutcome, app: String, token: String, logger: Logger) {
        var metadata: Logger.Metadata {
            [
                "app_id": "\(app)", "pushkey": "\(Redaction.pushkey(token))", "outcome": "\(outcome.label)",
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
