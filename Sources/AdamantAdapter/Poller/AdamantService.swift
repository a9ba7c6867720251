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
    let batchAttempts = Mutex<[String: Int]>([:])

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

    func count(_ label: String, _ dimensions: (String, String)...) {
        counters.increment(label, dimensions)
    }
}
