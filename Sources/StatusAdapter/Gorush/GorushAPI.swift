import DeliveryRecord
import Foundation
package import HeraldCore
import HeraldUpstream
package import Logging
package import Metrics
import NIOCore
import NIOHTTP1
package import Pushkins
import ServiceLifecycle
import Synchronization

/// gorush's `POST /api/push` (docs/status-protocol.md, "The gorush-compatible API"), so that an
/// unmodified status-go push server can use Herald as its GorushURL. Requests are validated with
/// gorush's messages, queued in the Status store (committed before the answer, so nothing answered
/// "ok" is lost to a restart or a crash) and answered at once (status-go's client has no timeout);
/// a pool of workers sends them (or they are sent before answering in `sync` mode). Rejected tokens
/// go to the logs, the metrics and the optional feedback URL.
///
/// The workers are a `Service` (`GorushAPI+Workers.swift`): on graceful shutdown they finish the
/// jobs they hold; the rest of the queue waits in the store for the next start.
package final class GorushAPI: Service {
    let config: StatusConfig.Gorush
    let delivery: any StatusSender
    let dispatcher: Dispatcher
    let logger: Logger
    let metrics: any MetricsFactory
    let counters: CounterCache
    /// The store holding the queue, once the Status server has opened it.
    let queueStore: @Sendable () async throws -> any GorushQueueStore
    /// Wakes the dispatcher when a job is queued or a worker is free.
    let bell: Doorbell
    /// The queue's claims and the depth gauges' pace (docs/architecture.md, "Time").
    let clock: any HeraldClock
    let stats = Mutex(Stats())
    let feedbackClient: UpstreamHTTPClient?

    struct Stats {
        var busyWorkers = 0
        var success = 0
        var failure = 0
        var submitted = 0
        var total = 0
        /// Per platform: pushes that succeeded, and that failed.
        var platforms: [StatusPlatform: (success: Int, error: Int)] = [:]
    }

    package init(
        config: StatusConfig.Gorush, delivery: any StatusSender, queue: @escaping @Sendable () async throws -> any GorushQueueStore,
        logger: Logger, metrics: any MetricsFactory, dispatcher: Dispatcher? = nil, clock: any HeraldClock
    ) {
        self.clock = clock
        bell = Doorbell(clock: clock)
        self.config = config
        self.delivery = delivery
        self.queueStore = queue
        self.logger = logger
        self.metrics = metrics
        self.counters = CounterCache(factory: metrics)
        self.dispatcher = dispatcher ?? Dispatcher(pushkins: [], counters: counters, clock: clock)
        _ = counters.counter(MetricName.gorushJobsSentAgain)  // exported at 0 from the start
        feedbackClient =
            config.feedbackURL == nil
            ? nil : try? UpstreamHTTPClient(settings: UpstreamSettings(maxConnections: 4, requestTimeout: config.feedbackTimeout))
    }

    /// What `POST /api/push` answers, and what is left to do once the answer is written.
    package struct PushAnswer: Sendable {
        package let body: JSONValue
        /// In `sync` mode with the record in PostgreSQL: the sent pushes' finishes, one statement
        /// for the request, written after its answer as a notify's are (docs/operations.md, "Once").
        package let finishing: Dispatcher.Dispatched?
    }

    /// `POST /api/push`: the answer, or a `GorushError` with gorush's message.
    package func handle(body: [UInt8]) async throws(GorushError) -> PushAnswer {
        let (notifications, counts) = try Self.parseRequest(body, maxNotification: config.maxNotification)
        var logs: [JSONValue] = []
        var finishing: Dispatcher.Dispatched?
        if config.sync {
            // Every push of the request at once, `workers` of them in flight, as gorush's workers
            // send a synchronous request's notifications.
            let sent = await send(notifications.map(\.typed), limit: config.workers)
            logs = sent.logs
            if let dispatched = sent.dispatched, !dispatched.finishes.isEmpty { finishing = dispatched }
        } else {
            try await enqueue(notifications)
        }
        stats.withLock {
            $0.submitted += notifications.count
            $0.total += counts
        }
        return PushAnswer(body: ["success": "ok", "counts": .int(Int64(counts)), "logs": .array(logs)], finishing: finishing)
    }

    /// One notification of a `POST /api/push` body, read once: as it came (what the queue keeps)
    /// and typed (what is sent).
    package struct Parsed: Sendable {
        package let object: JSONObject
        package let typed: GorushNotification
    }

    /// Reads a `POST /api/push` body: its notifications, and gorush's `counts` (tokens, plus one
    /// per Android topic message). A field of the wrong type anywhere is gorush's "Missing
    /// notifications field." (its JSON binding fails); an unknown field is ignored.
    package static func parseRequest(_ body: [UInt8], maxNotification: Int) throws(GorushError) -> (
        notifications: [Parsed], counts: Int
    ) {
        guard let json = try? JSONParser.parse(body), case .object(let root) = json else { throw .missingNotifications }
        guard case .array(let items)? = root["notifications"] else { throw .missingNotifications }
        guard !items.isEmpty else { throw .emptyNotifications }
        guard items.count <= maxNotification else { throw .tooManyNotifications(items.count, limit: maxNotification) }
        var notifications: [Parsed] = []
        notifications.reserveCapacity(items.count)
        var counts = 0
        for item in items {
            guard case .object(let n) = item else { throw .missingNotifications }
            let typed: GorushNotification
            do {
                typed = try GorushNotification(n)
            } catch {
                throw .missingNotifications
            }
            guard !typed.tokens.isEmpty || !typed.to.isEmpty, n["platform"]?.pythonInt != nil else { throw .invalidNotification }
            notifications.append(Parsed(object: n, typed: typed))
            counts += typed.tokens.count + (typed.to.isEmpty ? 0 : 1)
            if typed.platform == 2 || typed.platform == 3, !typed.topic.isEmpty { counts += 1 }
        }
        return (notifications, counts)
    }

    /// Queues the notifications durably, all or none.
    private func enqueue(_ notifications: [Parsed]) async throws(GorushError) {
        let bodies = notifications.map { JSONWriter.serialize(.object($0.object)) }
        let accepted: Bool
        do {
            accepted = try await queueStore().enqueueGorush(bodies, maxJobs: config.queueSize, maxBytes: config.queueMaxBytes)
        } catch {
            logger.error("gorush queue could not be written", metadata: ["error": "\(error)"])
            throw .queueUnavailable
        }
        guard accepted else {
            if let suppressed = LogThrottle.perDevice.admit("gorush queue full") {
                logger.warning("gorush queue is full; request refused with 503", metadata: ["similar_lines_suppressed": "\(suppressed)"])
            }
            throw .queueFull
        }
        bell.ring()
    }

    /// What became of notifications: their failure log entries, whether a token's push is held by
    /// another instance that has not finished it (its queued job must stay queued), and the
    /// pushes' finishes, for the caller to write (`Dispatched.answered(heard:)`).
    struct Sent {
        var logs: [JSONValue] = []
        var heldElsewhere = false
        var dispatched: Dispatcher.Dispatched?
    }

    /// A notification made ready to send: as gorush sends it (`to` added to its tokens, an
    /// Android topic kept only when configured), and its platform.
    private struct Ready: Sendable {
        let notification: GorushNotification
        let platform: StatusPlatform
    }

    /// One push: a ready notification's place, and one of its tokens.
    private struct Push: Sendable {
        let notification: Int
        let token: String
    }

    /// Sends gorush notifications, each to each of its tokens: one platform's pushes in one keyed
    /// dispatch (on PostgreSQL, one claim statement), at most `limit` of them in flight, as
    /// gorush's workers and `max_concurrent_pushes` bound its own; a request's platforms side by
    /// side. The log entries keep the notifications' order and their tokens'.
    func send(_ notifications: [GorushNotification], limit: Int) async -> Sent {
        var ready: [Ready] = []
        var pushes: [Push] = []
        for typed in notifications {
            var n = typed
            guard let platform = StatusPlatform(number: n.platform) else {
                logger.info("gorush notification for an unsupported platform dropped", metadata: ["platform": "\(n.platform)"])
                continue
            }
            if !n.to.isEmpty { n.tokens.append(n.to) }
            if platform != .ios && !config.honourAndroidTopic { n.topic = "" }
            for token in n.tokens { pushes.append(Push(notification: ready.count, token: token)) }
            ready.append(Ready(notification: n, platform: platform))
        }
        var sent = Sent()
        var outcomes = [DeviceOutcome](repeating: .notDispatched, count: pushes.count)
        // Each platform's pushes, by their places: the platforms go side by side (one alone in this
        // task), each with at most `limit` of its pushes in flight.
        var platforms: [(platform: StatusPlatform, places: [Int])] = []
        for r in ready where !platforms.contains(where: { $0.platform == r.platform }) {
            platforms.append((r.platform, pushes.indices.filter { ready[pushes[$0].notification].platform == r.platform }))
        }
        let byPlatform = await fanOut(platforms, notStarted: nil as Dispatcher.Dispatched?) { [pushes, ready] group in
            await self.dispatch(group.places.map { pushes[$0] }, ready: ready, platform: group.platform, limit: limit)
        }
        for (group, dispatched) in zip(platforms, byPlatform) {
            guard let dispatched else { continue }
            for (place, outcome) in zip(group.places, dispatched.outcomes) { outcomes[place] = outcome }
            if sent.dispatched == nil { sent.dispatched = dispatched } else { sent.dispatched?.join(dispatched) }
        }
        for (push, outcome) in zip(pushes, outcomes) {
            let n = ready[push.notification].notification
            let platform = ready[push.notification].platform
            // Another instance claimed this push and has not finished it (docs/operations.md,
            // "Once"): neither a success nor a failure yet. Its job stays queued and comes back.
            if case .failed(reason: .heldElsewhere) = outcome {
                sent.heldElsewhere = true
                continue
            }
            let ok: Bool
            switch outcome {
            case .delivered, .skipped: ok = true
            default: ok = false
            }
            stats.withLock {
                if ok { $0.success += 1 } else { $0.failure += 1 }
                if ok { $0.platforms[platform, default: (0, 0)].success += 1 } else { $0.platforms[platform, default: (0, 0)].error += 1 }
            }
            guard !ok else { continue }
            let error = outcome.reason.map(String.init(describing:)) ?? outcome.label
            var entry: JSONObject = [
                "type": "failed-push", "platform": .string(platform.name), "token": .string(push.token), "message": .string(n.message),
                "error": .string(error),
            ]
            if let id = n.notifId { entry["notif_id"] = id }
            sent.logs.append(.object(entry))
            await postFeedback(.object(entry))
        }
        return sent
    }

    /// One platform's pushes, through the keyed path.
    private func dispatch(_ pushes: [Push], ready: [Ready], platform: StatusPlatform, limit: Int) async -> Dispatcher.Dispatched {
        let delivery = self.delivery
        let context = DispatchContext(logger: logger)
        let app = delivery.pushkinName(platform) ?? platform.name
        // A notification is a repeat only by its `notif_id` (docs/operations.md, "Once"): the same
        // id to the same token within the window is one delivery. Without one, every notification
        // is new: status-go's push server sends byte-identical notifications for consecutive
        // messages of one chat, and never retries a gorush request.
        let keys: [RepeatKey?] = pushes.map { push in
            ready[push.notification].notification.notifId.map { RepeatKey(["gorush", JSONWriter.string($0), push.token]) }
        }
        // Traced under its `notif_id` (`herald trace <notif_id>`), each token a device.
        let traces: [TraceStart?] = pushes.map { push in
            ready[push.notification].notification.notifId.map { id in
                TraceStart(eventId: id.stringValue ?? JSONWriter.string(id), frontEnd: "gorush", appId: app, pushkey: push.token)
            }
        }
        return await dispatcher.deliverOnce(pushes, app: app, keys: keys, traces: traces, limit: limit, logger: logger) { push in
            let result = await delivery.send(ready[push.notification].notification, platform: platform, token: push.token, context: context)
            return Dispatcher.Delivery(result, pushkin: delivery.pushkinName(platform), token: push.token)
        }
    }

    private func postFeedback(_ entry: JSONValue) async {
        guard let url = config.feedbackURL, let client = feedbackClient else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        _ = try? await client.send(url: url, headers: headers, body: JSONWriter.buffer(entry))
    }

    /// gorush's `GET /api/stat/app`.
    package func appStats() -> JSONValue {
        stats.withLock { s in
            var stats: JSONObject = [
                "version": "herald", "busy_workers": .int(Int64(s.busyWorkers)), "success_tasks": .int(Int64(s.success)),
                "failure_tasks": .int(Int64(s.failure)), "submitted_tasks": .int(Int64(s.submitted)), "total_count": .int(Int64(s.total)),
            ]
            for platform in StatusPlatform.all {
                let counts = s.platforms[platform] ?? (0, 0)
                stats[platform.name] = ["push_success": .int(Int64(counts.success)), "push_error": .int(Int64(counts.error))]
            }
            return .object(stats)
        }
    }
}
