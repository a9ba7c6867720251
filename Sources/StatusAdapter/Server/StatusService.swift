import Foundation
package import HeraldCore
package import Logging
package import Metrics
package import Pushkins
package import ServiceLifecycle

/// The Status server's lifetime as a `Service`: `run()` opens the store (creating or upgrading its
/// schema), loads or creates the identity, then serves until graceful shutdown and closes the
/// store. The store's own services (a PostgreSQL pool) come first in `services`.
package final class StatusService: Service {
    package let config: StatusConfig
    /// The PostgreSQL store, made at once (its pool is a service); SQLite opens its file in `run()`.
    private let postgres: PostgresStatusStore?
    let sender: any StatusSender
    let logger: Logger
    let metrics: any MetricsFactory
    private let ready = ReadinessGate<StatusServer>()

    /// Builds the store's client (no I/O yet). Throws for a store URL that cannot be used.
    let dispatcher: Dispatcher?
    let clock: any HeraldClock

    package init(
        config: StatusConfig, sender: any StatusSender, logger: Logger, metrics: any MetricsFactory, dispatcher: Dispatcher? = nil,
        clock: any HeraldClock
    ) throws {
        self.dispatcher = dispatcher
        self.clock = clock
        switch config.store {
        case .sqlite: postgres = nil
        case .postgres(let url):
            postgres = try PostgresStatusStore(
                url: url, logger: logger, timeout: config.storeTimeout, maxConnections: config.storeMaxConnections, metrics: metrics,
                clock: clock)
        }
        self.config = config
        self.sender = sender
        self.logger = logger
        self.metrics = metrics
    }

    /// The store's services, then this one.
    package var services: [any Service] { (postgres?.services ?? []) + [self] }

    /// The PostgreSQL store's health (SQLite has none of its own).
    package var health: [ComponentHealth] { postgres?.health.map { [$0] } ?? [] }

    /// The running server; nil until the store is open.
    package var server: StatusServer? { ready.value }

    /// The open store, once the server can answer; throws if it could not be opened.
    package func store() async throws -> any StatusStore { try await ready.wait().store }

    /// Returns once the server can answer; throws if the store could not be opened.
    package func waitUntilReady() async throws { _ = try await ready.wait() }

    package func run() async throws {
        let store: any StatusStore
        do {
            store = try postgres ?? SQLiteStatusStore(path: config.sqlitePath ?? "", cacheKiB: config.sqliteCacheKiB, clock: clock)
        } catch {
            ready.fail(error)
            throw error
        }
        let server: StatusServer
        do {
            // A shutdown does not wait for a database that is down or hangs at start-up.
            let candidate = config.identity ?? Secp256k1.PrivateKey().rawRepresentation
            let secret = try await cancelWhenGracefulShutdown {
                try await store.migrate()
                return try await store.identity(orCreate: candidate)
            }
            let identity = try Secp256k1.PrivateKey(rawRepresentation: config.identity ?? secret)
            server = StatusServer(
                identity: identity, config: config, store: store, delivery: sender, logger: logger, metrics: metrics,
                dispatcher: dispatcher, clock: clock)
        } catch {
            ready.fail(error)
            await store.close()
            // Stopped before the store was open: a shutdown, not a failure.
            if Task.isShuttingDownGracefully || Task.isCancelled { return }
            throw error
        }
        // The series dashboards chart exist from the start, at 0.
        _ = Counter(label: MetricName.statusRegistrations, dimensions: [("result", "ok")], factory: metrics)
        _ = Counter(label: MetricName.statusPushRequests, dimensions: [("result", "answered")], factory: metrics)
        logger.notice("Status push-notification server ready", metadata: ["public_key": "0x\(server.publicKey.compressed.hex)"])
        ready.open(server)
        // Until graceful shutdown: the response cache's writer, which then stores what is left.
        await server.runResponseCache()
        await store.close()
    }
}
