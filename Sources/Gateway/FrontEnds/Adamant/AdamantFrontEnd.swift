import AdamantAdapter
import HeraldCore
import HeraldHTTPServer
import Pushkins
import ServiceLifecycle

/// The ADAMANT notification service (docs/adamant.md): no HTTP routes; its pollers read token
/// registrations and new transactions from the chain and wake devices through the APNs apps named
/// in `adamant:`.
struct AdamantFrontEnd: FrontEnd {
    let name = "adamant"
    let service: AdamantService

    func addRoutes(to routes: inout RouteBuilder) {}

    let apps: Set<String>

    var services: [any Service] { service.services }
    var health: [ComponentHealth] { service.health }

    var appsInUse: Set<String> { apps }
}

/// Builds the ADAMANT front end from the `adamant:` section.
struct AdamantFrontEndFactory: FrontEndFactory {
    let sections = ["adamant"]

    func makeFrontEnds(_ context: FrontEndContext, diagnostics: ConfigDiagnostics) -> [any FrontEnd] {
        guard let section = context.section("adamant", diagnostics: diagnostics) else { return [] }
        let config = AdamantConfig.read(section, proxy: context.config.proxy)
        guard config.enabled else { return [] }
        func apns(_ key: String, _ name: String) -> (any APNsSending)? {
            context.apnsSender(named: name, at: "adamant.\(key)", diagnostics: diagnostics)
        }
        guard !config.apnsApp.isEmpty, let production = apns("apns_app", config.apnsApp), let keys = config.keys else { return [] }
        let sandbox: any APNsSending
        if let name = config.apnsSandboxApp {
            guard let named = apns("apns_sandbox_app", name) else { return [] }
            sandbox = named
        } else {
            guard
                let shared = context.apnsSender(
                    of: production, baseURL: config.developmentBaseURL, at: "adamant.development_base_url", diagnostics: diagnostics)
            else { return [] }
            sandbox = shared
        }
        guard !context.readOnly else { return [] }
        var logger = context.logger
        logger[metadataKey: "component"] = "adamant"
        do {
            let store: any AdamantStore
            switch config.store {
            case .sqlite(let path): store = try SQLiteAdamantStore(path: path, cacheKiB: config.sqliteCacheKiB, clock: context.clock)
            case .postgres(let url):
                store = try PostgresAdamantStore(
                    url: url, logger: logger, leaseCheck: config.leaseCheck, timeout: config.storeTimeout,
                    maxConnections: config.storeMaxConnections,
                    metrics: context.metrics.factory, clock: context.clock)
            }
            let nodes = try AdamantNodeClient(nodes: config.nodes, settings: config.node, metrics: context.metrics.factory)
            let pusher = AdamantPusher(
                production: production, sandbox: sandbox, topic: config.topic, chat: config.chatPayload, transfer: config.transferPayload)
            let service = AdamantService(
                config: config, keys: keys, nodes: nodes, store: store, pusher: pusher, dispatcher: context.dispatcher, logger: logger,
                metrics: context.metrics.factory, clock: context.clock)
            return [
                AdamantFrontEnd(service: service, apps: Set([config.apnsApp, config.apnsSandboxApp].compactMap { $0 }))
            ]
        } catch {
            diagnostics.error("adamant.store", "\(error)")
            return []
        }
    }
}
