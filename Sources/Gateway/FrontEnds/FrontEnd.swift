import Logging
import Pushkins
import ServiceLifecycle

/// A way in to Herald: the Matrix push gateway API, the Status server, gorush's API, and the
/// Web Push relay and ADAMANT poller to come. A front end uses pushkins to deliver; the gateway
/// composes front ends and knows nothing of their insides (docs/architecture.md).
public protocol FrontEnd: Sendable {
    /// A short name for logs (`matrix`, `status`, `gorush`).
    var name: String { get }

    /// Its HTTP routes, each with its body limit and error dialect.
    func addRoutes(to routes: inout RouteTable)

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
}

extension FrontEnd {
    public var services: [any Service] { [] }
    public func waitUntilReady() async throws {}
    public var ownListeners: [ListenerAddress] { [] }
    public var appsInUse: Set<String> { [] }
    public func drained() async {}
    public var health: [ComponentHealth] { [] }
}

/// Where a listener binds: each host on one port.
public struct ListenerAddress: Sendable, Equatable {
    public var hosts: [String]
    public var port: Int

    public init(hosts: [String], port: Int) {
        self.hosts = hosts
        self.port = port
    }
}

/// What a front end is built from.
public struct FrontEndContext: Sendable {
    public let config: GatewayConfig
    public let pushkins: [any Pushkin]
    public let metrics: GatewayMetrics
    public let logger: Logger
    /// Validation only (`herald check-config`): build nothing that touches files or the network.
    public let readOnly: Bool

    public func pushkin(named name: String) -> (any Pushkin)? { pushkins.first { $0.name == name } }
}

/// Builds front ends from the config. A new front end is one factory in `FrontEnds.standard`.
public protocol FrontEndFactory: Sendable {
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
    public var reloadable: Bool { false }
}

public enum FrontEnds {
    /// The front ends shipped with Herald.
    public static let standard: [any FrontEndFactory] = [
        MatrixFrontEndFactory(), StatusFrontEndFactory(), RelayFrontEndFactory(), AdamantFrontEndFactory(),
    ]
}
