package import HeraldCore
package import Logging
package import Metrics
package import Pushkins
package import ServiceLifecycle
import Synchronization

/// The ADAMANT notification service as a `Service` (docs/adamant.md): while this instance holds
/// the polling lease, three pollers run side by side: registration signals to the service's
/// address, chat transactions and transfers. Each keeps a height cursor in the store, from its
/// first poll on (where it started) and moved forward by polls that find nothing; a batch's
/// pushes and its cursor are committed together, and the recently pushed (transaction, device)
/// keys make a replayed batch push nothing twice. A failing node or database is backed off and
/// tried again; nothing here ends the process, and a graceful shutdown ends it promptly.
package final class AdamantService: Service {
    let config: AdamantConfig
    let keys: AdamantKeys
    let nodes: AdamantNodeClient
    let store: any AdamantStore
    let pusher: AdamantPusher
    let dispatcher: Dispatcher
    /// What the pollers' intervals and backoff are measured on (docs/architecture.md, "Time").
    let clock: any HeraldClock
    let logger: Logger
    let metrics: any MetricsFactory
    let counters: CounterCache
    private let batchAttempts = Mutex<[String: Int]>([:])

    package init(
        config: AdamantConfig, keys: AdamantKeys, nodes: AdamantNodeClient, store: any AdamantStore, pusher: AdamantPusher,
        dispatcher: Dispatcher, logger: Logger, metrics: any MetricsFactory, clock: any HeraldClock
    ) {
        self.clock = clock
        self.dispatcher = dispatcher
        self.config = config
        self.keys = keys
        self.nodes = nodes
        self.store = store
        self.pusher = pusher
        self.logger = logger
        self.metrics = metrics
        self.counters = CounterCache(factory: metrics)
    }

    /// The PostgreSQL store's health (SQLite has none of its own).
    package var health: [ComponentHealth] { store.health.map { [$0] } ?? [] }

    /// The store's services, then this one.
    package var services: [any Service] { store.services + [self] }

    package func run() async throws {
        defer { logger.notice("ADAMANT pollers stopped") }
        guard await migrated() else {
            await nodes.shutdown()
            return
        }
        // The series dashboards chart exist from the start, at 0.
        for kind in ["chat", "transfer"] {
            for outcome in ["delivered", "rejected", "failed"] {
                _ = counters.counter(MetricName.adamantPushes, [("kind", kind), ("outcome", outcome)])
            }
        }
        logger.notice("ADAMANT notification service ready", metadata: ["address": "\(keys.address)", "nodes": "\(nodes.nodes.count)"])
        do {
            try await store.whileLeader(retry: config.leaseRetry) { [self] in
                // A lost lease (thrown by a poller) stops all three.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        try await self.loop(worker: "signals", interval: self.config.signalPollInterval, step: self.pollSignals)
                    }
                    group.addTask { try await self.loop(worker: "chats", interval: self.config.pollInterval, step: self.pollChats) }
                    group.addTask { try await self.loop(worker: "transfers", interval: self.config.pollInterval, step: self.pollTransfers) }
                    try await group.waitForAll()
                }
            }
        } catch {
            // Only cancellation ends the lease loop with an error: the shutdown goes on.
            logger.info("ADAMANT pollers cancelled", metadata: ["error": "\(error)"])
        }
        await store.close()
        await nodes.shutdown()
    }

    /// Prepares the store's tables, trying again with backoff while the database is unreachable;
    /// false when a graceful shutdown came first.
    private func migrated() async -> Bool {
        var pause = config.leaseRetry
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown { try await self.store.migrate() }
                return true
            } catch {
                if Task.isShuttingDownGracefully || Task.isCancelled { break }
                logger.warning("ADAMANT store unavailable; trying again", metadata: ["error": "\(error)", "in": "\(pause)"])
            }
            let wait = pause
            try? await cancelWhenGracefulShutdown { try await self.clock.wait(wait) }
            pause = min(pause * 2, config.maxBackoff)
        }
        return false
    }

    // MARK: the loop

    /// Runs `step` every `interval` until graceful shutdown (a step in progress finishes first);
    /// a failed step backs off, doubling up to `max_backoff`. Throws `LeaseLost` (the poller stops
    /// at once) when the store says this instance no longer holds the lease.
    func loop(worker: String, interval: Duration, step: @escaping @Sendable (Int64) async throws -> Int64) async throws {
        let failures = counters.counter(MetricName.adamantPollFailures, [("worker", worker)])
        let polls = counters.counter(MetricName.adamantPolls, [("worker", worker)])
        let cursorGauge = Gauge(label: MetricName.adamantCursorHeight, dimensions: [("worker", worker)], factory: metrics)
        let lagGauge = Gauge(label: MetricName.adamantHeightLag, dimensions: [("worker", worker)], factory: metrics)
        var cursor: Int64?
        var pause = interval
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let start: Int64
                if let cursor { start = cursor } else { start = try await firstCursor(worker) }
                cursor = start
                // The chain's height before the poll: what the poll covers when its node said it.
                let chain = try? await nodes.height()
                var reached = try await step(start)
                if let chain, chain.node == nodes.currentNode, chain.height - 1 > reached {
                    // Nothing (more) up to below the top block: stored, so that a restart, a crash
                    // or another instance resumes here rather than reading those blocks again.
                    try await store.commit(pushed: [], worker: worker, cursor: chain.height - 1, keep: config.recentPushes)
                    reached = chain.height - 1
                }
                cursor = reached
                cursorGauge.record(reached)
                // How far behind the chain this poller is (a node's current height, minus the cursor).
                if let chain { lagGauge.record(max(0, chain.height - reached)) }
                pause = interval
                polls.increment()
            } catch let lost as LeaseLost {
                throw lost
            } catch {
                if Task.isCancelled { break }
                failures.increment()
                logger.warning("ADAMANT poll failed", metadata: ["worker": "\(worker)", "error": "\(error)"])
                pause = min(pause * 2, config.maxBackoff)
            }
            let wait = pause
            try? await cancelWhenGracefulShutdown { try await self.clock.wait(wait) }
        }
    }

    /// Where a poller starts, stored at once (a poller that finds nothing before a restart then
    /// resumes from here, not from the chain's height at the restart).
    func firstCursor(_ worker: String) async throws -> Int64 {
        let start = try await startHeight(worker)
        try await store.commit(pushed: [], worker: worker, cursor: start, keep: config.recentPushes)
        logger.info("ADAMANT poller starts", metadata: ["worker": "\(worker)", "height": "\(start)"])
        return start
    }

    /// Where a poller starts: its stored cursor, else (or with `network`) the chain's current
    /// height, or the configured height for `initial`.
    func startHeight(_ worker: String) async throws -> Int64 {
        switch config.startup {
        case .initial(let height):
            return try await store.cursor(worker) ?? height
        case .database:
            if let stored = try await store.cursor(worker) { return stored }
            return try await networkHeight()
        case .network:
            return try await networkHeight()
        }
    }

    func networkHeight() async throws -> Int64 {
        let latest = try await nodes.get("/api/transactions", query: [("orderBy", "timestamp:desc"), ("limit", "1")])
        return latest["transactions"]?.arrayValue?.first?["height"]?.pythonInt ?? 0
    }

    // MARK: the three pollers

    /// Signals to the service's address above `cursor`, applied in chain order.
    func pollSignals(_ cursor: Int64) async throws -> Int64 {
        var query = [("orderBy", "timestamp:desc"), ("isIn", keys.address), ("type", "3")]
        if cursor > 0 { query.append(("fromHeight", String(cursor))) }
        let batch = try await nodes.transactions("/api/chats/get", query: query).filter { $0.recipientId == keys.address }
        guard let top = batch.map(\.height).max() else { return cursor }
        var changes: [DeviceChange] = []
        for transaction in batch.sorted(by: AdamantTransaction.chainOrder) {
            do {
                changes.append(try SignalDecoder.decode(transaction, service: keys))
            } catch {
                count(MetricName.adamantSignals, ("result", "invalid"))
                logger.info(
                    "ADAMANT signal skipped",
                    metadata: ["transaction": "\(transaction.id)", "sender": "\(transaction.senderId)", "why": "\(error)"])
            }
        }
        try await store.apply(changes, worker: "signals", cursor: top)
        for change in changes {
            switch change.action {
            case .add: count(MetricName.adamantSignals, ("result", "add"))
            case .remove: count(MetricName.adamantSignals, ("result", "remove"))
            }
        }
        return top
    }

    /// Chat transactions (every chat type but signals) above `cursor`; the node's height filter on
    /// chats is strict.
    func pollChats(_ cursor: Int64) async throws -> Int64 {
        var query = [("orderBy", "timestamp:desc")]
        if cursor > 0 { query.append(("fromHeight", String(cursor))) }
        let batch = try await nodes.transactions("/api/chats/get", query: query).filter { $0.chat != nil && $0.chat?.type != 3 }
        return try await push(batch, kind: .chat, worker: "chats", cursor: cursor)
    }

    /// Transfers above `cursor`; the node's height filter on transactions is inclusive.
    func pollTransfers(_ cursor: Int64) async throws -> Int64 {
        var query = [("orderBy", "timestamp:desc"), ("type", "0")]
        if cursor > 0 { query.append(("and:fromHeight", String(cursor + 1))) }
        let batch = try await nodes.transactions("/api/transactions", query: query).filter { $0.type == 0 }
        return try await push(batch, kind: .transfer, worker: "transfers", cursor: cursor)
    }

    // MARK: pushing a batch

    /// Pushes a batch and moves the cursor to just below its top block: the top block is read again
    /// by the next poll, so that one seen while its transactions were still arriving is completed
    /// (the pushed keys make the replay push nothing twice). Rows a page returned twice (the chain
    /// grew between pages) are pushed once.
    func push(_ fetched: [AdamantTransaction], kind: AdamantPusher.Kind, worker: String, cursor: Int64) async throws -> Int64 {
        var seen: Set<String> = []
        let batch = fetched.filter { seen.insert($0.id).inserted }
        guard let top = batch.map(\.height).max() else { return cursor }
        let next = max(cursor, top - 1)
        let devices = try await store.devices(addresses: Array(Set(batch.map(\.recipientId))))
        var byAddress: [String: [RegisteredDevice]] = [:]
        for device in devices { byAddress[device.address, default: []].append(device) }
        var jobs: [(key: String, transaction: AdamantTransaction, device: RegisteredDevice)] = []
        for transaction in batch.sorted(by: AdamantTransaction.chainOrder) {
            for device in byAddress[transaction.recipientId] ?? [] {
                jobs.append(("\(transaction.id):\(device.provider.rawValue):\(device.token)", transaction, device))
            }
        }
        let done = try await store.pushed(among: jobs.map(\.key))
        jobs.removeAll { done.contains($0.key) }
        // Pushed only by the lease holder, proved just before (a commit after a hand-over is refused too).
        if !jobs.isEmpty { try await store.confirmLease() }

        var finished: [String] = []
        var temporary = 0
        let outcomes = await dispatcher.deliver(jobs, limit: config.maxConcurrentPushes, logger: logger) { job in
            let outcome = await self.pusher.push(job.transaction, kind: kind, to: job.device, logger: self.logger)
            if case .failed = outcome {} else { await self.mark(job.key) }
            return Dispatcher.Delivery(outcome, pushkin: self.pusher.sender(job.device.provider).name, token: job.device.token)
        }
        for (job, outcome) in zip(jobs, outcomes) {
            count(MetricName.adamantPushes, ("kind", kind.rawValue), ("outcome", outcome.label))
            switch outcome {
            case .failed:
                temporary += 1
            case .rejected where outcome.tokenShouldBeDropped:
                finished.append(job.key)
                let removed = try await store.remove(token: job.device.token, provider: job.device.provider)
                counters.increment(MetricName.adamantTokensRemoved, by: Int64(removed))
                logger.info(
                    "ADAMANT device token removed",
                    metadata: ["token": "\(Redaction.pushkey(job.device.token))", "reason": "\(outcome.reason?.label ?? "")"])
            case .delivered, .rejected, .dropped, .skipped:
                finished.append(job.key)
            }
        }

        let attempts = batchAttempts.withLock { table -> Int in
            table[worker, default: 0] += temporary > 0 ? 1 : 0
            return table[worker, default: 0]
        }
        if temporary > 0 && attempts < config.maxBatchAttempts {
            // Keep the cursor: the next poll sends what failed (and only that) again.
            try await store.commit(pushed: finished, worker: worker, cursor: cursor, keep: config.recentPushes)
            throw PushesPending(count: temporary)
        }
        if temporary > 0 {
            logger.error("ADAMANT pushes given up after retries", metadata: ["worker": "\(worker)", "count": "\(temporary)"])
            counters.increment(MetricName.adamantPushesGivenUp, by: Int64(temporary))
        }
        batchAttempts.withLock { $0[worker] = 0 }
        if !finished.isEmpty || next != cursor {
            try await store.commit(pushed: finished, worker: worker, cursor: next, keep: config.recentPushes)
        }
        return next
    }

    /// Records one push as done the moment its service answered, so that a poller killed before the
    /// batch's commit does not send it again (docs/adamant.md, "Several instances"). A mark that
    /// fails is made again by the commit; only a kill in between sends the push twice.
    private func mark(_ key: String) async {
        do {
            try await store.markPushed([key])
        } catch {
            logger.debug("ADAMANT push not marked at once; the batch's commit records it", metadata: ["error": "\(error)"])
        }
    }

    struct PushesPending: Error, CustomStringConvertible {
        let count: Int
        var description: String { "\(count) push(es) failed for now; retried on the next poll" }
    }

    private func count(_ label: String, _ dimensions: (String, String)...) {
        counters.increment(label, dimensions)
    }
}
