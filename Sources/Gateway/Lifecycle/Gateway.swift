import DeliveryRecord
package import HeraldCore
package import HeraldHTTPServer
import HeraldUpstream
package import Logging
import NIOCore
package import Pushkins
package import ServiceLifecycle
import Synchronization
package import UnixSignals

/// A configured Herald: its pushkins, its front ends, its listeners and their service group.
///
/// `init` validates the config and builds everything without I/O; `start()` binds the listeners
/// (so ports are known) and makes the service group; `run()` runs it until `shutdown()` or a
/// signal. Services stop in the reverse of their order: listeners drain first (up to
/// `http.shutdown_grace_period`), then front ends finish their work, then pushkins close their
/// upstream connections (docs/architecture.md, "Lifecycle").
package final class Gateway: Sendable {
    /// The config the gateway started with (listeners and front-end sections are not reloaded).
    package let config: GatewayConfig
    package let metrics: GatewayMetrics
    let logger: Logger
    let registry: PushkinRegistry
    let factories: [any FrontEndFactory]
    /// What everything that waits or reads the time uses (docs/architecture.md, "Time").
    let clock: any HeraldClock
    /// What the listeners serve; a reload swaps it.
    let handler: SwappableRoutes
    let live: Mutex<Live>
    /// Repeats and the answer's deadline, kept across reloads.
    let onceSetup: OnceSetup
    /// The upstream origins' pushback holds (docs/operations.md, "Pushback"), kept across reloads.
    let holds: UpstreamHolds
    /// What the config's choices mean (`ConfigDiagnostics.notes`), for `check-config` to print.
    package let configNotes: [String]
    /// The tracing exporter, when `tracing:` is enabled: first in the group, so it flushes last.
    let observability: (any Service)?
    private let group = Mutex<(group: ServiceGroup, listeners: [HTTPServer], metrics: HTTPServer?)?>(nil)

    /// The APNs senders to apps' other hosts that front ends asked for (closed with the pushkins).
    let hostSenders = HostSenders()

    struct Live {
        var pushkins: [any Pushkin]
        /// Routes and delivers for the front ends built with these pushkins (and `send-test`).
        var dispatcher: Dispatcher
        var frontEnds: [any FrontEnd]
        /// Pushkins replaced by a reload that another front end still uses: closed at shutdown.
        var retained: [any Pushkin] = []
    }

    /// The pushkins of `apps:` as last loaded.
    package var pushkins: [any Pushkin] { live.withLock { $0.pushkins } }
    package var frontEnds: [any FrontEnd] { live.withLock { $0.frontEnds } }
    package var routes: Router { handler.current }

    /// Builds pushkins and front ends. Problems are added to `diagnostics` (naming key paths); the
    /// caller stops when it has errors.
    package init(
        config: GatewayConfig, diagnostics: ConfigDiagnostics, registry: PushkinRegistry = .standard,
        frontEnds factories: [any FrontEndFactory] = FrontEnds.standard, logger: Logger, readOnly: Bool = false,
        clock: any HeraldClock, observability: (any Service)? = nil
    ) {
        self.clock = clock
        self.observability = observability
        self.config = config
        self.logger = logger
        self.registry = registry
        self.factories = factories
        let metrics = GatewayMetrics()
        self.metrics = metrics
        let holds = UpstreamHolds(clock: clock, metrics: metrics.factory, logger: logger)
        self.holds = holds
        let pushkins = Self.buildPushkins(
            config, registry: registry, metrics: metrics, logger: logger, readOnly: readOnly, clock: clock, holds: holds,
            diagnostics: diagnostics)
        let onceSetup: OnceSetup
        do {
            onceSetup = try OnceSetup(
                config.notify.record, counters: metrics.counters, metrics: metrics.factory, logger: logger, clock: clock)
        } catch {
            diagnostics.error("notify.repeat_store", "\(error)")
            var memory = config.notify.record
            memory.repeatStore = nil
            onceSetup =
                (try? OnceSetup(memory, counters: metrics.counters, metrics: metrics.factory, logger: logger, clock: clock))
                ?? OnceSetup.none
        }
        self.onceSetup = onceSetup
        let context = FrontEndContext(
            config: config, pushkins: pushkins, metrics: metrics, logger: logger, readOnly: readOnly, hostSenders: hostSenders,
            clock: clock, once: onceSetup.once)
        let frontEnds = factories.flatMap { $0.makeFrontEnds(context, diagnostics: diagnostics) }
        let claimed = Set(factories.flatMap(\.sections))
        for section in config.extraSections.keys where !claimed.contains(section) {
            diagnostics.warning(section, "unknown section, ignored")
        }
        GatewayConfig.fleetNotes(config, diagnostics: diagnostics)
        GatewayConfig.postgresRightsNote(config, diagnostics: diagnostics)
        configNotes = diagnostics.notes
        live = Mutex(Live(pushkins: pushkins, dispatcher: context.dispatcher, frontEnds: frontEnds))
        handler = SwappableRoutes(Self.routes(config, frontEnds, health: onceSetup.health, holds: holds, logger: logger))
    }

    static func buildPushkins(
        _ config: GatewayConfig, registry: PushkinRegistry, metrics: GatewayMetrics, logger: Logger, readOnly: Bool,
        clock: any HeraldClock, holds: UpstreamHolds?, diagnostics: ConfigDiagnostics
    ) -> [any Pushkin] {
        let environment = PushkinEnvironment(
            logger: logger, metrics: metrics.factory, proxy: config.proxy, readOnly: readOnly, clock: clock, holds: holds)
        return registry.build(
            apps: config.rawApps, sharedKeys: ["inflight_request_limit", "per_device_per_minute"], environment: environment,
            diagnostics: diagnostics)
    }

    /// A listener's routes, the one way every listener's are made: `/health` (every front end's
    /// components, the gateway's own, the held origins) and the routes of the front ends it serves
    /// (`serving`: all of them on the main listeners, one on a front end's own), its errors in
    /// `errors`' words.
    static func routes(
        _ config: GatewayConfig, _ frontEnds: [any FrontEnd], serving: [any FrontEnd]? = nil, errors: any ErrorRenderer = MatrixErrors(),
        health extra: [ComponentHealth], holds: UpstreamHolds?, logger: Logger
    ) -> Router {
        var routes = RouteBuilder(defaultMaxBodyBytes: config.http.maxRequestBodyBytes, errors: errors, logger: logger)
        addHealth(to: &routes, frontEnds, health: extra, holds: holds)
        for frontEnd in serving ?? frontEnds { frontEnd.addRoutes(to: &routes) }
        return routes.router
    }

    /// `/health` on a listener: every front end's components, the gateway's own (the delivery
    /// record) and the held origins.
    private static func addHealth(
        to routes: inout RouteBuilder, _ frontEnds: [any FrontEnd], health extra: [ComponentHealth], holds: UpstreamHolds?
    ) {
        let health = HealthReport(components: frontEnds.flatMap(\.health) + extra, holds: holds)
        routes.add(.exact("/health"), [.GET, .HEAD]) { _ in health.response() }
    }

    /// Every pushkin to close at shutdown: the current ones, those a reload kept for other front
    /// ends, and the senders to other hosts.
    var allPushkins: [any Pushkin] { live.withLock { $0.pushkins + $0.retained } + hostSenders.all }

    /// Closes every pushkin's upstream connections: the one way a gateway's pushkins are closed,
    /// whether it ran (its `PushkinsService`) or not (a refused config, `check-config`, a command).
    package func close() async { await Self.close(allPushkins) }

    /// Closes `pushkins` all at once: a TLS connection whose peer does not answer the close waits
    /// out its own timeout, which one after another would add up past the shutdown's limits.
    static func close(_ pushkins: [any Pushkin]) async {
        await withDiscardingTaskGroup { group in
            for pushkin in pushkins { group.addTask { await pushkin.shutdown() } }
        }
    }

    /// Binds the listeners (one per `http.bind_addresses` entry, and the metrics listener) and
    /// makes the service group; `signals` trigger its graceful shutdown.
    package func start(signals: [UnixSignal] = [], reloadPath: String? = nil) async throws {
        var listeners: [HTTPServer] = []
        let accessLog = config.log.accessLog ? AccessLog() : nil
        let inboundLimits = InboundLimits(config.http)
        let reusePort = config.http.reusePort ? config.http.reusePortHandover : nil
        for address in config.http.bindAddresses {
            let server = try await HTTPServer.bind(
                host: address, port: config.http.port, handler: handler,
                limits: inboundLimits, logger: logger, accessLog: accessLog, reusePort: reusePort, clock: clock)
            logger.notice("Listening for notifications", metadata: ["address": "\(server.localAddress)"])
            listeners.append(server)
        }
        for frontEnd in frontEnds {
            for address in frontEnd.ownListeners {
                let routes = Self.routes(
                    config, frontEnds, serving: [frontEnd], errors: frontEnd.ownListenerErrors, health: onceSetup.health, holds: holds,
                    logger: logger)
                for host in address.hosts {
                    let server = try await HTTPServer.bind(
                        host: host, port: address.port, handler: routes,
                        limits: inboundLimits, logger: logger, accessLog: accessLog, reusePort: reusePort, clock: clock)
                    logger.notice("Listening", metadata: ["front_end": "\(frontEnd.name)", "address": "\(server.localAddress)"])
                    listeners.append(server)
                }
            }
        }
        var metricsServer: HTTPServer?
        if config.prometheus.enabled {
            let server = try await HTTPServer.bind(
                host: config.prometheus.address, port: config.prometheus.port,
                handler: MetricsEndpoint(metrics: metrics, deliveries: DeliveriesEndpoint(once: onceSetup.once, token: config.admin.token)),
                logger: logger, clock: clock)
            logger.notice("Serving Prometheus metrics", metadata: ["address": "\(server.localAddress)"])
            metricsServer = server
        }
        let frontEnds = self.frontEnds
        let ready: @Sendable () async throws -> Void = {
            for frontEnd in frontEnds { try await frontEnd.waitUntilReady() }
        }
        // Dependency order: what is used comes before what uses it, and stops after it.
        var services: [any Service] = observability.map { [$0] } ?? []
        services.append(PushkinsService { [self] in await close() })
        // Calls that outlive their request finish before the pushkins close.
        services += onceSetup.services
        for frontEnd in frontEnds { services += frontEnd.services }
        if let reloadPath { services.append(ReloadService(gateway: self, configPath: reloadPath)) }
        services += listeners.map { ListenerService(server: $0, ready: ready) }
        if let metricsServer { services.append(ListenerService(server: metricsServer, ready: {})) }

        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: WatchedService($0, logger: logger)) }, gracefulShutdownSignals: signals, logger: logger)
        configuration.maximumGracefulShutdownDuration = config.http.shutdownGracePeriod
        configuration.maximumCancellationDuration = .seconds(10)
        group.withLock { $0 = (ServiceGroup(configuration: configuration), listeners, metricsServer) }
    }

    /// The bound ports: `bind_addresses` in order, then the front ends' own listeners.
    package var ports: [Int] { group.withLock { $0?.listeners.map(\.port) ?? [] } }
    package var metricsPort: Int? { group.withLock { $0?.metrics?.port } }

    /// The connections its listeners serve now: what a test waits on (rather than for a time).
    package var openConnections: Int { group.withLock { $0?.listeners.reduce(0) { $0 + $1.openConnectionCount } ?? 0 } }

    /// Whether any listener still accepts connections (false once a shutdown began).
    package var accepting: Bool { group.withLock { $0?.listeners.contains { $0.isAccepting } ?? false } }

    /// Runs every service until they have all stopped (after `shutdown()` or a signal).
    package func run() async throws {
        guard let serviceGroup = group.withLock({ $0?.group }) else { return }
        defer { logger.notice("Shut down") }
        try await serviceGroup.run()
    }

    /// Starts the graceful shutdown; `run()` returns when it is complete.
    package func shutdown() async {
        guard let serviceGroup = group.withLock({ $0?.group }) else {
            await close()
            return
        }
        logger.notice("Shutting down: draining requests in progress")
        await serviceGroup.triggerGracefulShutdown()
    }
}

/// Serves the Prometheus exposition on any path, as Sygnal's metrics listener does, but for
/// Herald's delivery trace (`DeliveriesEndpoint`).
struct MetricsEndpoint: HTTPHandler {
    let metrics: GatewayMetrics
    let deliveries: DeliveriesEndpoint
    var connectionErrors: any ErrorRenderer { MatrixErrors() }

    func handle(_ request: ServerRequest) async -> ServerResponse {
        if request.path == DeliveriesEndpoint.path { return await deliveries.handle(request) }
        var response = ServerResponse(status: .ok, body: ByteBuffer(bytes: metrics.exposition()))
        response.headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        return response
    }
}
