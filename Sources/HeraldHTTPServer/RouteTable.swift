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

        /// The route's own path (for spans and logs: never a request's path).
        var name: String {
            switch self {
            case .exact(let p), .subtree(let p): return p
            }
        }

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
    /// With `answerDeadline`, a request the handler has not answered in time is answered by the
    /// server (`AnswerDeadline`).
    package mutating func add(
        _ match: PathMatch, _ methods: [HTTPMethod], maxBodyBytes: Int? = nil, dialect: ErrorDialect = .matrix,
        answerDeadline: AnswerDeadline? = nil, _ handler: @escaping Handler
    ) {
        let policy = RequestPolicy(
            maxBodyBytes: maxBodyBytes ?? defaultPolicy.maxBodyBytes, dialect: dialect, answerDeadline: answerDeadline)
        if let index = routes.firstIndex(where: { $0.match == match }) {
            for method in methods { routes[index].methods[method.rawValue] = handler }
            // A path has one policy; a deadline, once given, stays (it is the path's, whatever the method).
            routes[index].policy = RequestPolicy(
                maxBodyBytes: policy.maxBodyBytes, dialect: policy.dialect,
                answerDeadline: answerDeadline ?? routes[index].policy.answerDeadline)
        } else {
            var table: [String: Handler] = [:]
            for method in methods { table[method.rawValue] = handler }
            routes.append(Route(match: match, methods: table, policy: policy))
        }
    }

    package func routeName(forPath path: String) -> String? {
        routes.first { $0.match.matches(path) }.map(\.match.name)
    }

    package func policy(forPath path: String) -> RequestPolicy {
        routes.first { $0.match.matches(path) }?.policy ?? defaultPolicy
    }

    /// The request's route, found once: its policy, its name and its handler (or the 404 or 405
    /// that answers it).
    package func resolve(method: HTTPMethod, path: String) -> ResolvedRoute {
        guard let route = routes.first(where: { $0.match.matches(path) }) else {
            return ResolvedRoute(policy: defaultPolicy, name: nil, responder: .error(.notFound))
        }
        guard let handler = route.methods[method.rawValue] else {
            return ResolvedRoute(
                policy: route.policy, name: route.match.name, responder: .error(.methodNotAllowed(allow: route.methods.keys.sorted())))
        }
        return ResolvedRoute(policy: route.policy, name: route.match.name, responder: .handler(handler, logger: logger))
    }
}
