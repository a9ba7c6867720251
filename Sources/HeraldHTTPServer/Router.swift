package import Logging
package import NIOHTTP1

/// The HTTP routes of a listener, frozen (made by a `RouteBuilder`): by path, then by method,
/// each with its body limit and error renderer. Unknown paths get 404 and wrong methods 405
/// (`ServerError`s, which each front end's renderer names in its own words). Handlers throw
/// `HTTPResponseError`s; the route's renderer writes them.
package struct Router: HTTPHandler {
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
            case .subtree(let p):
                // `p` or `p/…`, compared in place (no `p + "/"` made per request).
                guard path.utf8.starts(with: p.utf8) else { return false }
                let rest = path.utf8.dropFirst(p.utf8.count)
                return rest.isEmpty || rest.first == UInt8(ascii: "/")
            }
        }
    }

    struct Route: Sendable {
        var match: PathMatch
        var methods: [String: Method]
        var policy: RequestPolicy
    }

    /// A method's handler, kept in a struct: a closure stored in a dictionary directly is kept in
    /// its generic form, and each lookup wrapped it in a thunk (an allocation per request).
    struct Method: Sendable {
        let handler: Handler
    }

    private let routes: [Route]
    /// The policy of paths no route claims, and of routes that name no limit.
    package let defaultPolicy: RequestPolicy
    /// Where a handler's unexpected (non-HTTP) error is logged.
    let logger: Logger?

    fileprivate init(routes: [Route], defaultPolicy: RequestPolicy, logger: Logger?) {
        self.routes = routes
        self.defaultPolicy = defaultPolicy
        self.logger = logger
    }

    package var connectionErrors: any ErrorRenderer { defaultPolicy.errors }

    package func routeName(forPath path: String) -> String? {
        routes.first { $0.match.matches(path) }.map(\.match.name)
    }

    package func policy(forPath path: String) -> RequestPolicy {
        routes.first { $0.match.matches(path) }?.policy ?? defaultPolicy
    }

    package func handle(_ request: ServerRequest) async -> ServerResponse {
        await resolve(method: request.method, path: request.path).respond(to: request)
    }

    /// The request's route, found once: its policy, its name and its handler (or the 404 or 405
    /// that answers it).
    package func resolve(method: HTTPMethod, path: String) -> ResolvedRoute {
        guard let route = routes.first(where: { $0.match.matches(path) }) else {
            return ResolvedRoute(policy: defaultPolicy, name: nil, responder: .error(.notFound))
        }
        guard let method = route.methods[method.rawValue] else {
            return ResolvedRoute(
                policy: route.policy, name: route.match.name, responder: .error(.methodNotAllowed(allow: route.methods.keys.sorted())))
        }
        return ResolvedRoute(policy: route.policy, name: route.match.name, responder: .handler(method.handler, logger: logger))
    }
}

/// A listener's routes while they are being added (`add`), then frozen into the `Router` the
/// server serves (`router`): a router is never changed once made, and a reload makes a new one.
package struct RouteBuilder: Sendable {
    private var routes: [Router.Route] = []
    /// The policy of paths no route claims, and of routes that name no limit.
    package let defaultPolicy: RequestPolicy
    /// Where a handler's unexpected (non-HTTP) error is logged.
    let logger: Logger?

    /// `errors`: of unknown paths, of routes that name none, and of the listener's own errors
    /// (`connectionErrors`).
    package init(defaultMaxBodyBytes: Int = 512 * 1024, errors: any ErrorRenderer = PlainTextErrors(), logger: Logger? = nil) {
        defaultPolicy = RequestPolicy(maxBodyBytes: defaultMaxBodyBytes, errors: errors)
        self.logger = logger
    }

    /// Adds `handler` for `methods` on `match`; a second call for the same match adds methods.
    /// With `answerDeadline`, a request the handler has not answered in time is answered by the
    /// server (`AnswerDeadline`).
    package mutating func add(
        _ match: Router.PathMatch, _ methods: [HTTPMethod], maxBodyBytes: Int? = nil, errors: (any ErrorRenderer)? = nil,
        answerDeadline: AnswerDeadline? = nil, _ handler: @escaping Router.Handler
    ) {
        let policy = RequestPolicy(
            maxBodyBytes: maxBodyBytes ?? defaultPolicy.maxBodyBytes, errors: errors ?? defaultPolicy.errors, answerDeadline: answerDeadline
        )
        if let index = routes.firstIndex(where: { $0.match == match }) {
            for method in methods { routes[index].methods[method.rawValue] = Router.Method(handler: handler) }
            // A path has one policy; a deadline, once given, stays (it is the path's, whatever the method).
            routes[index].policy = RequestPolicy(
                maxBodyBytes: policy.maxBodyBytes, errors: policy.errors,
                answerDeadline: answerDeadline ?? routes[index].policy.answerDeadline)
        } else {
            var table: [String: Router.Method] = [:]
            for method in methods { table[method.rawValue] = Router.Method(handler: handler) }
            routes.append(Router.Route(match: match, methods: table, policy: policy))
        }
    }

    /// The routes added so far, frozen.
    package var router: Router { Router(routes: routes, defaultPolicy: defaultPolicy, logger: logger) }
}
