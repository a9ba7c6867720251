package import DeliveryRecord
package import HeraldCore
package import HeraldHTTPServer
package import Logging
package import Pushkins
package import ServiceLifecycle

/// A way in to Herald: the Matrix push gateway API, the Status server, gorush's API, and the
/// Web Push relay and ADAMANT poller to come. A front end uses pushkins to deliver; the gateway
/// composes front ends and knows nothing of their insides (docs/architecture.md).
package protocol FrontEnd: Sendable {
    /// A short name for logs (`matrix`, `status`, `gorush`).
    var name: String { get }

    /// Its HTTP routes, each with its body limit and error renderer.
    func addRoutes(to routes: inout RouteBuilder)

    /// Its long-running parts, in dependency order (a store's pool before what uses it). They run
    /// in the gateway's service group after the pushkins and before the listeners, so they stop
    /// after the listeners have drained.
    var services: [any Service] { get }

    /// Returns once the front end can answer (its store is open); throws if it never will. The
    /// listeners accept no connection before every front end is ready.
    func waitUntilReady() async throws

    /// Listeners of its own besides the gateway's (the relay's `:42069`), serving only its routes
    /// and `/health`.
    var ownListeners: [ListenerAddress] { get }

    /// The apps (keys of `apps:`) whose pushkins it holds: a reload keeps those pushkins open.
    var appsInUse: Set<String> { get }

    /// Returns once no request it started is still in progress (a reload waits for this before
    /// closing the pushkins it replaced).
    func drained() async

    /// The dependencies it keeps serving without (its PostgreSQL store), which `/health` reports.
    var health: [ComponentHealth] { get }

    /// How its own listeners write the errors answered before a route is known (a malformed
    /// request, a request not received in time, a server too busy) and for unknown paths.
    var ownListenerErrors: any ErrorRenderer { get }
}

extension FrontEnd {
    package var services: [any Service] { [] }
    package func waitUntilReady() async throws {}
    package var ownListeners: [ListenerAddress] { [] }
    package var appsInUse: Set<String> { [] }
    package func drained() async {}
    package var health: [ComponentHealth] { [] }
    package var ownListenerErrors: any ErrorRenderer { MatrixErrors() }
}

/// Where a listener binds: each host on one port.
package struct ListenerAddress: Sendable, Equatable {
    package var hosts: [String]
    package var port: Int

    package init(hosts: [String], port: Int) {
        self.hosts = hosts
        self.port = port
    }
}

/// What a front end is built from.
package struct FrontEndContext: Sendable {
    package let config: GatewayConfig
    package let pushkins: [any Pushkin]
    package let metrics: GatewayMetrics
    package let logger: Logger
    /// Validation only (`herald check-config`): build nothing that touches files or the network.
    package let readOnly: Bool
    /// How every front end delivers: routing, limits, fan-out, outcome metrics and logging.
    package let dispatcher: Dispatcher
    /// The APNs senders to an app's other host, shared by the front ends that need one.
    package let hostSenders: HostSenders
    /// What front ends wait on and read the time from (docs/architecture.md, "Time").
    package let clock: any HeraldClock

    package init(
        config: GatewayConfig, pushkins: [any Pushkin], metrics: GatewayMetrics, logger: Logger, readOnly: Bool,
        hostSenders: HostSenders, clock: any HeraldClock, once: Once? = nil
    ) {
        self.clock = clock
        self.config = config
        self.pushkins = pushkins
        self.metrics = metrics
        self.logger = logger
        self.readOnly = readOnly
        self.hostSenders = hostSenders
        var limits: [String: Int] = [:]
        var budgets: [String: Int] = [:]
        for app in config.apps {
            limits[app.key] = app.inflightRequestLimit
            budgets[app.key] = app.perDevicePerMinute
        }
        dispatcher = Dispatcher(
            pushkins: pushkins, inflightLimits: limits, deviceBudgets: budgets, counters: metrics.counters, once: once, clock: clock)
    }

    package func pushkin(named name: String) -> (any Pushkin)? { pushkins.first { $0.name == name } }

    /// The top-level section `name` as a reader, nil when the config has none.
    package func section(_ name: String, diagnostics: ConfigDiagnostics) -> ConfigSection? {
        guard case .map(let values)? = config.extraSections[name] else { return nil }
        return ConfigSection(path: name, values: values, diagnostics: diagnostics)
    }

    /// The APNs app `name`, which the key path `key` names (`relay.apns_app`): an app missing from
    /// `apps:` or of another type is reported there. nil also for an app that failed to build (its
    /// own keys were reported).
    package func apnsSender(named name: String, at key: String, diagnostics: ConfigDiagnostics) -> (any APNsSending)? {
        guard let pushkin = pushkin(named: name) else {
            if !config.apps.contains(where: { $0.key == name }) { diagnostics.error(key, "no app '\(name)' in apps") }
            return nil
        }
        guard let sender = pushkin as? any APNsSending else {
            diagnostics.error(key, "app '\(name)' is of type \(pushkin.type), not apns")
            return nil
        }
        return sender
    }

    /// `app`'s sender to `baseURL` (`app` itself when it sends there), shared with the other front
    /// ends; an error names `key`. In validation, `app` itself: nothing is opened.
    package func apnsSender(of app: any APNsSending, baseURL: String, at key: String, diagnostics: ConfigDiagnostics) -> (any APNsSending)?
    {
        guard !readOnly else { return app }
        do {
            return try hostSenders.sender(of: app, baseURL: baseURL)
        } catch {
            diagnostics.error(key, "cannot open APNs connections: \(error)")
            return nil
        }
    }
}

/// Builds front ends from the config. A new front end is one factory in `FrontEnds.standard`.
package protocol FrontEndFactory: Sendable {
    /// The top-level config sections it reads; the gateway warns about sections nobody reads.
    var sections: [String] { get }

    /// The front ends this config asks for (none when disabled). Config problems go to
    /// `diagnostics`, named by key path.
    func makeFrontEnds(_ context: FrontEndContext, diagnostics: ConfigDiagnostics) -> [any FrontEnd]

    /// Whether a reload (SIGHUP) rebuilds its front ends from the new config; the others keep
    /// their start-up settings.
    var reloadable: Bool { get }
}

extension FrontEndFactory {
    package var reloadable: Bool { false }
}

package enum FrontEnds {
    /// The front ends shipped with Herald.
    package static let standard: [any FrontEndFactory] = [
        MatrixFrontEndFactory(), StatusFrontEndFactory(), RelayFrontEndFactory(), AdamantFrontEndFactory(),
    ]
}
