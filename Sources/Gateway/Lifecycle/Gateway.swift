import Logging
import NIOCore
import Pushkins
import StatusAdapter
import Synchronization

/// A configured Herald: its pushkins, its notify listeners and its metrics listener.
///
/// `start()` binds every listener (so ports are known), `run()` serves until `shutdown()`, which
/// stops accepting, lets requests in progress finish (up to `http.shutdown_grace_period`), then
/// closes the upstream connections.
public final class Gateway: Sendable {
    public let config: GatewayConfig
    public let pushkins: [any Pushkin]
    public let metrics: GatewayMetrics
    public let router: Router
    let logger: Logger
    public let statusConfig: StatusConfig
    private let status = StatusRoutes()
    private let state = ServerState()

    /// Builds the pushkins of `config`. Problems are added to `diagnostics` (naming key paths);
    /// the caller stops when it has errors.
    public init(
        config: GatewayConfig, diagnostics: ConfigDiagnostics, registry: PushkinRegistry = .standard,
        logger: Logger, readOnly: Bool = false, extraRoutes: (inout Router, [any Pushkin], GatewayMetrics) -> Void = { _, _, _ in }
    ) {
        self.config = config
        self.logger = logger
        let metrics = GatewayMetrics()
        self.metrics = metrics
        var pushkins: [any Pushkin] = []
        var limits: [String: InflightLimit] = [:]
        for app in config.apps {
            guard case .map(let values)? = config.rawApps[app.key] else { continue }
            let reader = ConfigReader(path: "apps", values: ["": .null], diagnostics: diagnostics)
            let appReader = ConfigReader(path: reader.keyPath(app.key), values: values, diagnostics: diagnostics)
            appReader.accept("type", "inflight_request_limit")
            guard let builder = registry.builder(for: app.type) else {
                if !app.type.isEmpty {
                    diagnostics.error(
                        appReader.keyPath("type"),
                        "unknown pushkin type '\(app.type)' (available: \(registry.types.joined(separator: ", ")))")
                }
                continue
            }
            var pushkinLogger = logger
            pushkinLogger[metadataKey: "pushkin"] = "\(app.key)"
            let environment = PushkinEnvironment(logger: pushkinLogger, metrics: metrics.factory, proxy: config.proxy, readOnly: readOnly)
            do {
                if let pushkin = try builder(app.key, appReader, environment) {
                    pushkins.append(pushkin)
                    limits[app.key] = InflightLimit(limit: app.inflightRequestLimit)
                    metrics.prepare(pushkin: app.key)
                }
            } catch {
                diagnostics.error(appReader.keyPath("type"), "could not start the \(app.type) pushkin: \(error)")
            }
            appReader.warnUnknownKeys()
        }
        self.pushkins = pushkins

        var statusConfig = StatusConfig()
        if case .map(let values)? = config.extraSections["status"] {
            let reader = ConfigReader(path: "status", values: values, diagnostics: diagnostics)
            statusConfig = StatusConfig.read(reader)
            for (key, app, kind) in [("apns_app", statusConfig.apnsApp, "apns"), ("fcm_app", statusConfig.fcmApp, "gcm")] {
                guard let app else { continue }
                if let pushkin = pushkins.first(where: { $0.name == app }) {
                    if pushkin.kind != kind { diagnostics.error("status.\(key)", "app '\(app)' is of type \(pushkin.kind), not \(kind)") }
                } else if config.apps.contains(where: { $0.key == app }) == false {
                    diagnostics.error("status.\(key)", "no app '\(app)' in apps")
                }
            }
        }
        self.statusConfig = statusConfig

        let notify = NotifyHandler(router: AppRouter(pushkins: pushkins), limits: limits, metrics: metrics, logger: logger)
        var router = Router()
        router.add(.subtree("/_matrix/push/v1/notify"), [.POST]) { await notify.handle($0) }
        router.add(.subtree("/_matrix/push/v1/notify"), [.GET]) { _ in .json(.ok, ["unifiedpush": ["gateway": "matrix"]]) }
        router.add(.exact("/health"), [.GET, .HEAD]) { _ in .empty(.ok) }
        if statusConfig.enabled { status.add(to: &router, gorush: statusConfig.gorush.enabled) }
        extraRoutes(&router, pushkins, metrics)
        self.router = router
    }

    /// Opens the Status store (when `status:` is enabled), then binds the notify listeners (one
    /// per `http.bind_addresses` entry) and the metrics listener.
    public func start() async throws {
        if statusConfig.enabled {
            let delivery = StatusDelivery(
                apns: pushkins.first { $0.name == statusConfig.apnsApp } as? APNsPushkin,
                fcm: pushkins.first { $0.name == statusConfig.fcmApp } as? FCMPushkin)
            var statusLogger = logger
            statusLogger[metadataKey: "component"] = "status"
            status.set(
                try await StatusService.start(config: statusConfig, delivery: delivery, logger: statusLogger, metrics: metrics.factory))
        }
        let limits = BodyLimits(default: config.http.maxRequestBodyBytes, status: statusConfig.maxMessageBytes)
        var servers: [HTTPServer] = []
        for address in config.http.bindAddresses {
            let server = try await HTTPServer.bind(
                host: address, port: config.http.port, handler: router, maxBodyBytes: limits.limit(for:),
                idleTimeout: TimeAmount.nanoseconds(Int64(config.http.idleTimeout.seconds * 1e9)), logger: logger)
            logger.notice("Listening for notifications", metadata: ["address": "\(server.localAddress)"])
            servers.append(server)
        }
        var metricsServer: HTTPServer?
        if config.prometheus.enabled {
            let metrics = self.metrics
            let server = try await HTTPServer.bind(
                host: config.prometheus.address, port: config.prometheus.port, handler: MetricsEndpoint(metrics: metrics), logger: logger)
            logger.notice("Serving Prometheus metrics", metadata: ["address": "\(server.localAddress)"])
            metricsServer = server
        }
        state.set(servers: servers, metrics: metricsServer)
    }

    /// The bound notify ports, in `bind_addresses` order.
    public var ports: [Int] { state.servers.map(\.port) }
    public var metricsPort: Int? { state.metricsServer?.port }

    /// Serves until `shutdown()` completes.
    public func run() async {
        let all = state.servers + (state.metricsServer.map { [$0] } ?? [])
        await withTaskGroup(of: Void.self) { group in
            for server in all { group.addTask { await server.serve() } }
        }
    }

    /// Drains: stop accepting, finish requests in progress, close idle connections, then close
    /// upstream connections. Requests still running after the grace period are abandoned.
    public func shutdown() async {
        logger.notice("Shutting down: draining requests in progress")
        let servers = state.servers + (state.metricsServer.map { [$0] } ?? [])
        let grace = config.http.shutdownGracePeriod
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskGroup(of: Void.self) { inner in
                    for server in servers { inner.addTask { await server.shutdown() } }
                }
            }
            group.addTask { try? await Task.sleep(for: grace) }
            await group.next()
            group.cancelAll()
        }
        await status.current?.shutdown()
        for pushkin in pushkins { await pushkin.shutdown() }
        logger.notice("Shut down")
    }
}

/// Request body limits: `http.max_request_body_bytes` for the Matrix API, `status.max_message_bytes`
/// for the Status and gorush APIs.
struct BodyLimits: Sendable {
    let `default`: Int
    let status: Int

    @Sendable func limit(for path: String) -> Int {
        path.hasPrefix("/_status/") || path == "/api/push" ? status : `default`
    }
}

/// Serves the Prometheus exposition on any path, as Sygnal's metrics listener does.
struct MetricsEndpoint: HTTPHandler {
    let metrics: GatewayMetrics

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        var response = HTTPResponse(status: .ok, body: ByteBuffer(bytes: metrics.exposition()))
        response.headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        return response
    }
}

private final class ServerState: Sendable {
    private let storage = Mutex<([HTTPServer], HTTPServer?)>(([], nil))

    func set(servers: [HTTPServer], metrics: HTTPServer?) { storage.withLock { $0 = (servers, metrics) } }
    var servers: [HTTPServer] { storage.withLock { $0.0 } }
    var metricsServer: HTTPServer? { storage.withLock { $0.1 } }
}

extension Gateway {
    public func logInfo(_ message: String, _ metadata: [String: String]) {
        logger.info("\(message)", metadata: metadata.mapValues { .string($0) })
    }
}
