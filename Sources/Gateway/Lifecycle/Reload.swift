import HeraldCore
import HeraldHTTPServer
import NIOHTTP1
import Pushkins
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The routes the listeners serve, replaced whole by a reload: a request is served entirely by the
/// routes it started with.
final class SwappableRoutes: HTTPHandler {
    private let routes: Mutex<Router>

    init(_ routes: Router) { self.routes = Mutex(routes) }

    var current: Router { routes.withLock { $0 } }
    func set(_ value: Router) { routes.withLock { $0 = value } }

    /// One lock per request: the route is taken from the table current at the request's head,
    /// and its policy and handler come from that table, whatever a reload sets meanwhile.
    func resolve(method: HTTPMethod, path: String) -> ResolvedRoute {
        routes.withLock { $0.resolve(method: method, path: path) }
    }
    var connectionErrors: any ErrorRenderer { current.connectionErrors }
    func handle(_ request: ServerRequest) async -> ServerResponse { await current.handle(request) }
}

/// Reloads the config on SIGHUP (docs/operations.md, "Signals").
struct ReloadService: Service {
    let gateway: Gateway
    let configPath: String

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            _ = await gateway.reload(configPath: configPath)
        }
    }
}

extension Gateway {
    /// Reloads `apps:` and the log level from `configPath` without dropping a request: the new
    /// pushkins and Matrix routes serve new requests at once; requests in progress finish on the old
    /// ones, which are then closed (unless another front end still uses them). The listeners, and the
    /// Status, relay and ADAMANT sections, keep their start-up settings. An invalid file changes
    /// nothing; every problem is logged and returned.
    @discardableResult
    package func reload(configPath: String) async -> [String] {
        let loaded: (GatewayConfig, ConfigDiagnostics)
        do {
            loaded = try ConfigLoading.load(path: configPath)
        } catch {
            for line in error.errors { logger.error("Reload refused; the running config stays", metadata: ["problem": "\(line)"]) }
            return error.errors
        }
        return await reload(loaded.0, diagnostics: loaded.1)
    }

    func reload(_ newConfig: GatewayConfig, diagnostics: ConfigDiagnostics) async -> [String] {
        let pushkins = Self.buildPushkins(
            newConfig, registry: registry, metrics: metrics, logger: logger, readOnly: false, clock: clock, holds: holds,
            diagnostics: diagnostics)
        let context = FrontEndContext(
            config: newConfig, pushkins: pushkins, metrics: metrics, logger: logger, readOnly: false, hostSenders: hostSenders,
            clock: clock, once: onceSetup.once)
        let reloaded = factories.filter(\.reloadable).flatMap { $0.makeFrontEnds(context, diagnostics: diagnostics) }
        guard diagnostics.errors.isEmpty else {
            for line in diagnostics.errors { logger.error("Reload refused; the running config stays", metadata: ["problem": "\(line)"]) }
            await Self.close(pushkins)
            return diagnostics.errors
        }
        for warning in diagnostics.warnings { logger.warning("Config: \(warning)") }

        let reloadableNames = Set(reloaded.map(\.name))
        let (previous, retired) = live.withLock { state -> ([any FrontEnd], [any Pushkin]) in
            let fixed = state.frontEnds.filter { !reloadableNames.contains($0.name) }
            let inUse = fixed.reduce(into: Set<String>()) { $0.formUnion($1.appsInUse) }
            let previous = state.frontEnds.filter { reloadableNames.contains($0.name) }
            var retired: [any Pushkin] = []
            for old in state.pushkins {
                if inUse.contains(old.name) { state.retained.append(old) } else { retired.append(old) }
            }
            state.pushkins = pushkins
            state.dispatcher = context.dispatcher
            state.frontEnds = fixed + reloaded
            return (previous, retired)
        }
        handler.set(Self.routes(config, frontEnds, health: onceSetup.health, holds: holds, logger: logger))
        LogLevelControl.set(newConfig.log.level)
        logger.notice(
            "Config reloaded", metadata: ["apps": "\(pushkins.map(\.name).joined(separator: ", "))", "log_level": "\(newConfig.log.level)"])

        // Requests that started on the old routes finish on the old pushkins, then those close.
        let (grace, clock) = (config.http.shutdownGracePeriod, self.clock)
        _ = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for frontEnd in previous { await frontEnd.drained() }
                return true
            }
            group.addTask {
                try? await clock.wait(grace)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        await Self.close(retired)
        return []
    }
}
