import HeraldCore
import Logging
import NIOHTTP1

/// The HTTP routes of a listener: by path, then by method, each with its body limit and error
/// dialect. Unknown paths get 404 and wrong methods 405 (`M_UNRECOGNIZED`, as the Matrix spec
/// asks, where Sygnal sends HTML pages). Handlers throw `HTTPResponseError`s; `ErrorResponder`
/// renders them.
package struct RouteTable: HTTPHandler {
    package typealias Handler = @Sendable (ServerRequest) async throws -> ServerResponse

    package enum PathMatch: Sendable, Equatable {
        case exact(String)
        /// The path itself and everything below it (`/a` matches `/a`, `/a/`, `/a/b`).
        case subtree(String)

        func matches(_ path: String) -> Bool {
            switch self {
            case .exact(let p): return path == p
            case .subtree(let p): return path == p || path.hasPrefix(p + "/")
            }
        }
    }

    struct Route: Sendable {
        var match: PathMatch
        var methods: [String: Handler]
        var policy: RequestPolicy
    }

    private var routes: [Route] = []
    /// The policy of paths no route claims, and of routes that name no limit.
    package let defaultPolicy: RequestPolicy
    /// Where a handler's unexpected (non-HTTP) error is logged.
    let logger: Logger?

    /// `dialect`: of unknown paths, and of the listener's own errors (`connectionDialect`).
    package init(defaultMaxBodyBytes: Int = 512 * 1024, dialect: ErrorDialect = .matrix, logger: Logger? = nil) {
        defaultPolicy = RequestPolicy(maxBodyBytes: defaultMaxBodyBytes, dialect: dialect)
        self.logger = logger
    }

    package var connectionDialect: ErrorDialect { defaultPolicy.dialect }

    /// Adds `handler` for `methods` on `match`; a second call for the same match adds methods.
    package mutating func add(
        _ match: PathMatch, _ methods: [HTTPMethod], maxBodyBytes: Int? = nil, dialect: ErrorDialect = .matrix,
        _ handler: @escaping Handler
    ) {
        let policy = RequestPolicy(maxBodyBytes: maxBodyBytes ?? defaultPolicy.maxBodyBytes, dialect: dialect)
        if let index = routes.firstIndex(where: { $0.match == match }) {
            for method in methods { routes[index].methods[method.rawValue] = handler }
            routes[index].policy = policy
        } else {
            var table: [String: Handler] = [:]
            for method in methods { table[method.rawValue] = handler }
            routes.append(Route(match: match, methods: table, policy: policy))
        }
    }

    package func routeName(forPath path: String) -> String? {
        switch routes.first(where: { $0.match.matches(path) })?.match {
        case .exact(let route)?, .subtree(let route)?: return route
        case nil: return nil
        }
    }

    package func policy(forPath path: String) -> RequestPolicy {
        routes.first { $0.match.matches(path) }?.policy ?? defaultPolicy
    }

    package func handle(_ request: ServerRequest) async -> ServerResponse {
        let path = request.path
        guard let route = routes.first(where: { $0.match.matches(path) }) else {
            return ErrorResponder.response(for: GatewayError.notFound, dialect: defaultPolicy.dialect)
        }
        guard let handler = route.methods[request.method.rawValue] else {
            return ErrorResponder.response(
                for: GatewayError.methodNotAllowed(allow: route.methods.keys.sorted()), dialect: route.policy.dialect)
        }
        do {
            return try await handler(request)
        } catch {
            return ErrorResponder.response(for: error, dialect: route.policy.dialect, logger: logger)
        }
    }
}
