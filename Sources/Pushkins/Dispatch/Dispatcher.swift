package import DeliveryRecord
package import HeraldCore
package import HeraldUpstream
package import Logging

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
    /// `per_device_per_minute` per app key (none where it is 0).
    private let budgets: [String: DeviceBudget]
    private let counters: CounterCache
    /// Repeats and the answer's deadline (nil: every device is sent, in the request's own task).
    package let once: Once?

    /// `inflightLimits`: `inflight_request_limit` per app key. The per-app series are made at 0,
    /// so that dashboards see them before the first event.
    /// `deviceBudgets`: `per_device_per_minute` per app key; the budgets refill on `clock`.
    package init(
        pushkins: [any Pushkin], inflightLimits: [String: Int] = [:], deviceBudgets: [String: Int] = [:], counters: CounterCache,
        once: Once? = nil, clock: any HeraldClock
    ) {
        router = AppIdRouter(pushkins: pushkins)
        self.once = once
        var limits: [String: InflightLimit] = [:]
        var budgets: [String: DeviceBudget] = [:]
        for pushkin in pushkins {
            if let limit = inflightLimits[pushkin.name] { limits[pushkin.name] = InflightLimit(limit: limit) }
            if let budget = deviceBudgets[pushkin.name], budget > 0 {
                budgets[pushkin.name] = DeviceBudget(perMinute: budget, clock: clock)
            }
            for label in [MetricName.inflightRequestLimitDrop, MetricName.rejectedPushkeys, MetricName.failedDevices] {
                _ = counters.counter(label, [("pushkin", pushkin.name)])
            }
        }
        self.limits = limits
        self.budgets = budgets
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
        await dispatchReporting(notification, logger: logger).outcomes
    }

    /// What `dispatchReporting` (or `deliverOnce`) found: each device's outcome, and how many were
    /// repeats answered without a second send (recorded, or joined to the same delivery under way).
    package struct Dispatched: Sendable {
        package var outcomes: [DeviceOutcome]
        package var repeats: Int
        /// The keys of the deliveries this notify sent that the memory record settled as they
        /// were answered: once the sender has heard the answer, `answered(heard:)` says so, and a
        /// notify that repeats them is sent again (docs/operations.md, "Once"). A repeat's answer
        /// (from the record, or joined to the delivery under way) never counts as heard: its
        /// sender already missed one answer, and may miss this one.
        package var settled: [RepeatKey] = []
        /// The finishes of the deliveries sent, for a store that writes them after the answer
        /// (PostgreSQL: one statement for the notify, with whether its sender heard it).
        package var finishes: [RecordFinish] = []
        let guardian: RepeatGuard?

        /// Whether anything is left to do once the answer is written.
        package var hasAfterAnswer: Bool { !settled.isEmpty || !finishes.isEmpty }

        /// Another dispatch of this dispatcher's joined to this one, so that one answer writes
        /// both's finishes in one statement (a gorush request's notifications).
        package mutating func join(_ other: Dispatched) {
            outcomes += other.outcomes
            repeats += other.repeats
            settled += other.settled
            finishes += other.finishes
        }

        /// The answer to this notify was written (`heard`: a 200 on an open connection, within
        /// `notify.heard_within`), or will never be heard: the finishes are written, and heard
        /// deliveries are no longer answered from the record. The finishes are handed to the
        /// record, not waited for: what is returned lands once they are written (at once with
        /// the memory record, which has none).
        package func answered(heard: Bool) -> Landing {
            guard let guardian else { return .landed }
            let settled = heard ? settled : []
            guard !finishes.isEmpty else {
                guardian.heard(settled)
                return .landed
            }
            let gate = ReadinessGate<Void>()
            guardian.finish(finishes, heard: heard) {
                guardian.heard(settled)
                gate.open(())
            }
            return gate.value == nil ? .pending(gate) : .landed
        }
    }

    /// `dispatch`, with the count of repeats (docs/operations.md, "Once"). A notify whose devices
    /// all go to one pushkin (one device, as a homeserver sends most) makes no array of its own
    /// beyond the group's outcomes: the group covers every device in order, and its outcomes are
    /// the notify's (docs/architecture.md, "Values on the notify path").
    package func dispatchReporting(_ notification: PushNotification, logger: Logger) async -> Dispatched {
        // Whose share of each app's limit the devices draw on (docs/operations.md, "Sources").
        var routing = Routing(devices: notification.devices.count, source: RequestContext.source)
        for (index, device) in notification.devices.enumerated() {
            switch route(device, logger: logger) {
            case .rejected(let outcome): routing.set(index, outcome)
            case .pushkin(let pushkin): routing.add(index, to: pushkin)
            }
        }
        // The app's limit: a group it refuses is answered now, its devices failed for the time.
        let first = routing.first.flatMap { admit($0, devices: notification.devices.count, into: &routing) }
        let others = routing.others
        let more = others.compactMap { admit($0, devices: notification.devices.count, into: &routing) }
        let context = DispatchContext(logger: logger)
        let groups: [Group]
        let results: [GroupResult]
        if more.isEmpty {
            guard let first else { return answered(notification, routing: routing, groups: [], results: [], logger: logger) }
            let result = await run(first, notification, context)
            // One group of every device, none refused: its outcomes are the notify's.
            if routing.outcomes == nil, first.indices == nil {
                for (device, outcome) in zip(notification.devices, result.outcomes) {
                    log(outcome, app: device.appId, token: device.pushkey, logger: logger)
                }
                return Dispatched(
                    outcomes: result.outcomes, repeats: result.repeats, settled: result.settled, finishes: result.finishes,
                    guardian: once?.guardian)
            }
            (groups, results) = ([first], [result])
        } else {
            groups = (first.map { [$0] } ?? []) + more
            results = await fanOut(groups, notStarted: GroupResult(outcomes: [], repeats: 0)) { group in
                await self.run(group, notification, context)
            }
        }
        return answered(notification, routing: routing, groups: groups, results: results, logger: logger)
    }

    /// The group with the slots the app's limit grants it, or nil when the limit refuses it (its
    /// devices' outcomes are then set in `routing`).
    private func admit(_ group: Group, devices: Int, into routing: inout Routing) -> Group? {
        guard let limit = limits[group.pushkin.name] else { return group }
        let (granted, refusal) = limit.acquire(upTo: group.indices?.count ?? devices, source: group.source)
        guard granted > 0 else {
            let outcome = refused(refusal, pushkin: group.pushkin.name)
            for index in group.indices ?? Array(0..<devices) { routing.set(index, outcome) }
            return nil
        }
        var admitted = group
        admitted.slots = granted
        return admitted
    }

    /// The notify's outcomes in device order, from those known without a send and the groups'
    /// results, each logged.
    private func answered(
        _ notification: PushNotification, routing: Routing, groups: [Group], results: [GroupResult], logger: Logger
    ) -> Dispatched {
        var outcomes = routing.outcomes ?? [DeviceOutcome?](repeating: nil, count: notification.devices.count)
        var repeats = 0
        var settled: [RepeatKey] = []
        var finishes: [RecordFinish] = []
        for (group, result) in zip(groups, results) {
            repeats += result.repeats
            if settled.isEmpty { settled = result.settled } else { settled += result.settled }
            if finishes.isEmpty { finishes = result.finishes } else { finishes += result.finishes }
            for (index, outcome) in zip(group.indices ?? Array(notification.devices.indices), result.outcomes) {
                outcomes[index] = outcome
            }
        }
        let final = outcomes.enumerated().map { index, outcome in
            let device = notification.devices[index]
            let result = outcome ?? .notDispatched
            log(result, app: device.appId, token: device.pushkey, logger: logger)
            return result
        }
        return Dispatched(outcomes: final, repeats: repeats, settled: settled, finishes: finishes, guardian: once?.guardian)
    }

    /// A notify's devices sorted by pushkin, as a value: the groups in order of their first device,
    /// and the outcomes known without a send (a device whose app id routes nowhere, or whose group
    /// the app's limit refused). While every device so far went to one pushkin, that group covers
    /// them all without a list of positions, and no outcome array is made.
    private struct Routing {
        let devices: Int
        let source: RequestSource?
        /// The group of the first device routed; while it covers every device so far, without positions.
        private(set) var first: Group?
        /// The other pushkins' groups.
        private(set) var others: [Group] = []
        /// The devices seen so far.
        private var seen = 0
        /// Made at the first outcome known without a send.
        private(set) var outcomes: [DeviceOutcome?]?

        init(devices: Int, source: RequestSource?) {
            self.devices = devices
            self.source = source
        }

        mutating func set(_ index: Int, _ outcome: DeviceOutcome) {
            if outcomes == nil { outcomes = [DeviceOutcome?](repeating: nil, count: devices) }
            outcomes?[index] = outcome
            split(at: index)
            seen = max(seen, index + 1)
        }

        mutating func add(_ index: Int, to pushkin: any Pushkin) {
            defer { seen = max(seen, index + 1) }
            if first == nil && outcomes == nil && index == 0 {
                first = Group(pushkin: pushkin, indices: nil, source: source)
                return
            }
            if first?.pushkin.name == pushkin.name {
                if first?.indices != nil { first?.indices?.append(index) }
                return
            }
            if let g = others.firstIndex(where: { $0.pushkin.name == pushkin.name }) {
                others[g].indices?.append(index)
                return
            }
            split(at: index)
            // Room for every device left, which may all join it: no growth step by step.
            var indices: [Int] = []
            indices.reserveCapacity(devices - index)
            indices.append(index)
            let group = Group(pushkin: pushkin, indices: indices, source: source)
            if first == nil { first = group } else { others.append(group) }
        }

        /// The device at `index` is not the first group's: that group lists the devices it has.
        private mutating func split(at index: Int) {
            guard let group = first, group.indices == nil else { return }
            var indices: [Int] = []
            indices.reserveCapacity(devices)
            indices.append(contentsOf: 0..<seen)
            first?.indices = indices
        }
    }

    private enum Routed {
        case pushkin(any Pushkin)
        case rejected(DeviceOutcome)
    }

    /// The device's pushkin, counted under `perPushkinType`; or, for an app id that names none or
    /// several, its rejection, logged.
    private func route(_ device: Device, logger: Logger) -> Routed {
        switch router.route(device.appId) {
        case .unknown:
            logger.info("Unknown app ID", metadata: ["app_id": "\(device.appId)"])
            return .rejected(.rejected(reason: .unknownAppId))
        case .ambiguous(let keys):
            logger.info("Ambiguous app ID", metadata: ["app_id": "\(device.appId)", "matches": "\(keys)"])
            return .rejected(.rejected(reason: .ambiguousAppId))
        case .pushkin(let pushkin):
            counters.increment(MetricName.perPushkinType, ("pushkin", pushkin.name))
            return .pushkin(pushkin)
        }
    }

    /// A group's outcomes, in its order, its repeats, and the keys it sent: settled by the memory
    /// record, or their finishes (for a store that writes them after the answer).
    private struct GroupResult: Sendable {
        var outcomes: [DeviceOutcome]
        var repeats: Int
        var settled: [RepeatKey] = []
        var finishes: [RecordFinish] = []
    }

    /// The devices of one request that route to one pushkin.
    private struct Group: Sendable {
        var pushkin: any Pushkin
        /// The positions of its devices in the notification; nil for every device, in order.
        var indices: [Int]?
        /// The `inflight_request_limit` slots this request holds for them; nil without a limit.
        var slots: Int?
        /// The request's source, whose share the slots are.
        var source: RequestSource?
    }

    /// A device the app's limit refused: counted, and failed for now (429 when nothing else failed).
    private func refused(_ refusal: InflightLimit.Refusal?, pushkin: String) -> DeviceOutcome {
        counters.increment(MetricName.inflightRequestLimitDrop, ("pushkin", pushkin))
        guard refusal == .overShare else { return .failed(reason: .inflightLimit) }
        counters.increment(MetricName.sourceLimited, ("reason", "share"))
        return .failed(reason: .sourceShare)
    }

    /// Dispatches one group, at most `slots` devices at a time (all at once without a limit), and
    /// frees the slots. With `once`, a device whose delivery is recorded or under way is answered
    /// without a second send (its key: the event, the app, the pushkey and the pusher's `data`).
    /// Everything runs in the request's own task: when the sender's patience ends first, the
    /// server answers it at the route's deadline and this goes on, recording the outcomes for the
    /// retry.
    private func run(_ group: Group, _ notification: PushNotification, _ context: DispatchContext) async -> GroupResult {
        let devices = group.indices.map { $0.map { notification.devices[$0] } } ?? notification.devices
        // A test push is never a repeat: each is sent (docs/operations.md, "Once").
        let event = notification.eventId == Once.testPushEventId ? "" : notification.eventId ?? ""
        guard let once, let guardian = once.guardian, !event.isEmpty else {
            return GroupResult(outcomes: await send(devices, group, notification, context).map(\.outcome), repeats: 0)
        }
        let keys = devices.map { RepeatKey?.some(Self.key(event: event, $0)) }
        let claims = await GroupClaims.claim(keys, app: group.pushkin.name, guardian: guardian) { position in
            TraceStart(eventId: event, appId: devices[position].appId, pushkey: devices[position].pushkey)
        }
        if claims.repeats > 0 {
            context.logger.info(
                "Repeat of a delivery already answered or under way: not sent again",
                metadata: ["pushkin": "\(group.pushkin.name)", "repeats": "\(claims.repeats)"])
        }
        var sent: [DeviceResult] = []
        var settled: (settled: [RepeatKey], finishes: [RecordFinish]) = ([], [])
        if claims.keys.isEmpty {
            if let slots = group.slots { limits[group.pushkin.name]?.release(count: slots, source: group.source) }
        } else {
            // Each result carries what its upstream call left for the trace (attempts, message id).
            sent = await send(claims.sending(devices), group, notification, context)
            settled = await claims.settle(sent, guardian: guardian)
        }
        return GroupResult(
            outcomes: await claims.outcomes(sent: sent, once: once), repeats: claims.repeats, settled: settled.settled,
            finishes: settled.finishes)
    }

    /// A Matrix delivery's key: the event, the app, the pushkey, and the pusher's `data` (a
    /// homeserver's retry carries it unchanged; two accounts' pushers on one phone differ in it).
    package static func key(event: String, _ device: Device) -> RepeatKey {
        guard let data = device.data else { return RepeatKey([event, device.appId, device.pushkey, ""]) }
        if data.isEmpty { return RepeatKey([event, device.appId, device.pushkey, "{}"]) }
        return RepeatKey([event, device.appId, device.pushkey], last: JSONWriter.serialize(.object(data)))
    }

    /// Sends `devices` through the group's pushkin in waves of its slots, frees the slots and
    /// counts the outcomes.
    private func send(
        _ devices: [Device], _ group: Group, _ notification: PushNotification, _ context: DispatchContext
    ) async -> [DeviceResult] {
        let wave = max(1, group.slots ?? devices.count)
        var outcomes: [DeviceResult] = []
        // The devices past their budget are not sent (nil: every device is within it).
        var budgeted: [DeviceOutcome?]?
        if let budget = budgets[group.pushkin.name], let first = Self.firstSpent(budget, devices) {
            budgeted = await Self.spent(budget, devices, notification, from: first)
        }
        let sendable = budgeted.map { refused in zip(devices, refused).compactMap { $1 == nil ? $0 : nil } } ?? devices
        if sendable.isEmpty {
            // Every device's budget is spent: nothing to send.
        } else if wave >= sendable.count {
            outcomes = await group.pushkin.dispatch(notification, devices: sendable, context: context)
        } else {
            for start in stride(from: 0, to: sendable.count, by: wave) {
                let chunk = Array(sendable[start..<min(start + wave, sendable.count)])
                outcomes += await group.pushkin.dispatch(notification, devices: chunk, context: context)
            }
        }
        if let budgeted {
            var sent = outcomes.makeIterator()
            outcomes = budgeted.map {
                $0.map { DeviceResult($0) } ?? sent.next() ?? DeviceResult(.notDispatched)
            }
        }
        if let slots = group.slots { limits[group.pushkin.name]?.release(count: slots, source: group.source) }
        for result in outcomes { count(result.outcome, pushkin: group.pushkin.name) }
        return outcomes
    }

    /// Takes each device's push from its budget, up to the first device whose budget is spent:
    /// its position and how long until it has one more, or nil when every device had its push
    /// (the usual case, with no await).
    private static func firstSpent(_ budget: DeviceBudget, _ devices: [Device]) -> (index: Int, wait: Duration)? {
        for (index, device) in devices.enumerated() {
            if let wait = budget.take(device.pushkey) { return (index, wait) }
        }
        return nil
    }

    /// Each device's outcome when its budget is spent (nil where it may be sent), from the first
    /// such device on (the ones before it had their push). A badge update past it waits for the
    /// budget, and is dropped when a later one of the device came meanwhile.
    private static func spent(
        _ budget: DeviceBudget, _ devices: [Device], _ notification: PushNotification, from first: (index: Int, wait: Duration)
    ) async -> [DeviceOutcome?]? {
        var refused: [DeviceOutcome?]?
        let badge = notification.eventId?.isEmpty ?? true
        for index in first.index..<devices.count {
            let pushkey = devices[index].pushkey
            guard let wait = index == first.index ? first.wait : budget.take(pushkey) else { continue }
            if badge, await budget.waitForBadge(pushkey, wait: wait) { continue }
            if refused == nil { refused = [DeviceOutcome?](repeating: nil, count: devices.count) }
            refused?[index] =
                badge ? .dropped(reason: .coalesced) : .failed(reason: .deviceBudget(seconds: max(1, Int(wait.seconds.rounded(.up)))))
        }
        return refused
    }

    // MARK: addressed by the front end

    /// What became of one job of `deliver`: the outcome, the pushkin it went through (nil when
    /// none could take it) and the device token, for the metrics and the log line, and what its
    /// upstream call left for the trace.
    package struct Delivery: Sendable {
        package var outcome: DeviceOutcome
        package var pushkin: String?
        package var token: String
        package var note: DeliveryNote

        package init(_ outcome: DeviceOutcome, pushkin: String?, token: String, note: DeliveryNote = DeliveryNote()) {
            self.outcome = outcome
            self.pushkin = pushkin
            self.token = token
            self.note = note
        }

        /// A pushkin's result for `token`.
        package init(_ result: DeviceResult, pushkin: String?, token: String) {
            self.init(result.outcome, pushkin: pushkin, token: token, note: result.note)
        }
    }

    /// A job whose task was cancelled before it started.
    private static let notStarted = Delivery(.failed(reason: .localError("cancelled before dispatch")), pushkin: nil, token: "")

    /// Runs `send` for every job, at most `limit` at once (all at once when nil), counts and logs
    /// each outcome as `dispatch` does, and returns the outcomes in job order. A job's `send` that
    /// is to be traced wraps its upstream call in `traced` (a Status message's, an ADAMANT
    /// transaction's).
    package func deliver<Job: Sendable>(
        _ jobs: [Job], limit: Int? = nil, logger: Logger, _ send: @escaping @Sendable (Job) async -> Delivery
    ) async -> [DeviceOutcome] {
        // Each job's outcome is counted and logged as it comes, so that the outcomes are the one
        // array made; a job that never started is logged here.
        let outcomes = await fanOut(jobs, limit: limit, notStarted: Self.notStarted.outcome) { job in
            self.reported(await send(job), logger: logger)
        }
        for outcome in outcomes where outcome == Self.notStarted.outcome { log(outcome, app: "", token: "", logger: logger) }
        return outcomes
    }

    /// A job's outcome, counted under its pushkin and logged.
    private func reported(_ delivery: Delivery, logger: Logger) -> DeviceOutcome {
        if let pushkin = delivery.pushkin { count(delivery.outcome, pushkin: pushkin) }
        log(delivery.outcome, app: delivery.pushkin ?? "", token: delivery.token, logger: logger)
        return delivery.outcome
    }

    /// `send`, in the delivery trace under `start`'s event and device, with its upstream call's
    /// attempts and message id; a `start` without an app is traced under the pushkin that sent
    /// it. For a delivery no claim traces (its front end's store keeps its repeats apart); without
    /// a record (`repeat_window: 0`) nothing is traced.
    package func traced(_ start: TraceStart, _ send: () async -> Delivery) async -> Delivery {
        guard let guardian = once?.guardian else { return await send() }
        let started = guardian.clock.date
        let delivery = await send()
        var start = start
        if start.appId.isEmpty { start.appId = delivery.pushkin ?? "" }
        await guardian.trace(start, TraceEnd(outcome: delivery.outcome, note: delivery.note), startedAt: started)
        return delivery
    }

    /// `deliver` for jobs a front end can key (the relay's messages, gorush's notifications), sent
    /// once within the window (docs/operations.md, "Once"), through the keyed path a Matrix notify's
    /// devices take (`GroupClaims`): the jobs' keys are claimed together (one statement on
    /// PostgreSQL), a job whose key is recorded is answered as then, one under way on this instance
    /// joins it, and a failure leaves no record. The sent jobs' finishes are returned with the
    /// outcomes, to be written together by `answered(heard:)`: once the front end's answer is
    /// written, or before it for a front end with no answer to wait for (gorush's queue). Such a
    /// job's sender sends it again whatever it heard (a Mastodon server's retry, a gorush batch
    /// after a cut answer), so its finish is never `heard`. Repeats are counted under `app`, not
    /// as new outcomes. A keyed job with a `traces` entry is in the delivery trace under that
    /// entry's event and device (gorush's `notif_id` and token), with its upstream call's attempts
    /// and message id.
    package func deliverOnce<Job: Sendable>(
        _ jobs: [Job], app: String, keys: [RepeatKey?], traces: [TraceStart?] = [], limit: Int? = nil, logger: Logger,
        _ send: @escaping @Sendable (Job) async -> Delivery
    ) async -> Dispatched {
        guard let once, let guardian = once.guardian, keys.contains(where: { $0 != nil }) else {
            return Dispatched(outcomes: await deliver(jobs, limit: limit, logger: logger, send), repeats: 0, guardian: nil)
        }
        let keys = jobs.indices.map { $0 < keys.count ? keys[$0] : nil }
        let trace = { (position: Int) in position < traces.count ? traces[position] : nil }
        let claims = await GroupClaims.claim(keys, app: app, guardian: guardian, trace: trace)
        if claims.repeats > 0 {
            logger.info(
                "Repeat of a delivery already answered or under way: not sent again",
                metadata: ["app": "\(app)", "repeats": "\(claims.repeats)"])
        }
        let delivered = await fanOut(claims.sending(jobs), limit: limit, notStarted: Self.notStarted, send)
        let sent = delivered.map { DeviceResult(reported($0, logger: logger), note: $0.note) }
        let settled = await claims.settle(sent, guardian: guardian)
        return Dispatched(
            outcomes: await claims.outcomes(sent: sent, once: once), repeats: claims.repeats, finishes: settled.finishes,
            guardian: guardian)
    }

    // MARK: metrics and log

    /// `herald_device_outcomes_total{pushkin,outcome,reason}`, and the rejected and failed counters
    /// operators alert on.
    private func count(_ outcome: DeviceOutcome, pushkin: String) {
        counters.increment(
            MetricName.deviceOutcomes, ("pushkin", pushkin), ("outcome", outcome.label), ("reason", outcome.reason?.label ?? ""))
        switch outcome {
        case .rejected: counters.increment(MetricName.rejectedPushkeys, ("pushkin", pushkin))
        case .failed: counters.increment(MetricName.failedDevices, ("pushkin", pushkin))
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
