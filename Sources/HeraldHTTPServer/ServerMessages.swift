import FoundationEssentials
package import HeraldCore
package import Logging
package import NIOCore
package import NIOHTTP1

/// A fully read HTTP request.
package struct ServerRequest: Sendable {
    package var method: HTTPMethod
    package var uri: String
    package var headers: HTTPHeaders
    package var body: ByteBuffer
    /// The request's id: its `X-Request-Id` when acceptable, else a new one; echoed in the
    /// response and in every log line written while it is served.
    package var requestId: String
    /// The address of the connection's peer (nil when the socket did not say): what a route that
    /// admits only some networks checks.
    package var peer: SocketAddress?
    /// Who sent it (`RequestSource`): the peer, or the client a trusted proxy names.
    package var source: RequestSource?

    package init(
        method: HTTPMethod, uri: String, headers: HTTPHeaders = HTTPHeaders(), body: ByteBuffer = ByteBuffer(), requestId: String? = nil
    ) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
        self.requestId = requestId ?? RequestContext.accept(headers.first(name: "x-request-id")) ?? SecureRandom.uuid().lowercasedString
    }

    /// The path without the query string.
    package var path: String { Self.path(of: uri) }

    /// The path of a request target without its query string.
    static func path(of uri: String) -> String {
        guard let q = uri.firstIndex(of: "?") else { return uri }
        return String(uri[..<q])
    }
}

/// A complete HTTP response.
package struct ServerResponse: Sendable {
    package var status: HTTPResponseStatus
    package var headers: HTTPHeaders
    package var body: ByteBuffer
    /// Run once the answer was handed to its connection (or the route's answer deadline answered
    /// first and this one was dropped), before the connection's next request is read: `written`
    /// says whether it went out on a connection still open, the deadline not having answered
    /// first (docs/architecture.md, "Answer deadline"). What it hands on without waiting (a
    /// database's statement) it returns as a `Landing`: the next request is read meanwhile, and
    /// its answer waits for that landing before it is written, so that a connection has at most
    /// one under way and they land in order. A sender's next request does not wait for what it
    /// will never see.
    package var afterAnswer: (@Sendable (_ written: Bool) -> Landing)?

    package init(status: HTTPResponseStatus, headers: HTTPHeaders = HTTPHeaders(), body: ByteBuffer = ByteBuffer()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package static func json(_ status: HTTPResponseStatus, _ value: JSONValue) -> ServerResponse {
        ServerResponse(status: status, headers: jsonHeaders, body: JSONWriter.buffer(value))
    }

    /// `Content-Type: application/json`, made once and shared, with room for the fields the server
    /// adds (`X-Request-Id`, `Content-Length`, `Connection`): the response's copy is made once at
    /// that size, not grown field by field.
    private static let jsonHeaders = {
        var headers = HTTPHeaders()
        headers.reserveCapacity(4)
        headers.add(name: "Content-Type", value: "application/json")
        return headers
    }()

    package static func empty(_ status: HTTPResponseStatus = .ok) -> ServerResponse {
        ServerResponse(status: status)
    }
}

/// How the server treats a request before its handler sees it: the body limit, the renderer its
/// errors (413 included) are written with, and the answer it writes itself when the handler takes
/// too long.
package struct RequestPolicy: Sendable {
    package var maxBodyBytes: Int
    package var errors: any ErrorRenderer
    package var answerDeadline: AnswerDeadline?

    package init(maxBodyBytes: Int, errors: any ErrorRenderer, answerDeadline: AnswerDeadline? = nil) {
        self.maxBodyBytes = maxBodyBytes
        self.errors = errors
        self.answerDeadline = answerDeadline
    }
}

/// A route's promise to answer within `within` (docs/architecture.md, "Answer deadline"): when
/// its handler has not answered by then, the server writes `response` on the connection itself,
/// with `Connection: close`, and the handler goes on in the request's own task (no hop, no task
/// of its own); its answer, when it comes, is dropped and the connection closed. The timer is one
/// of the connection's event loop, as the server's read and idle timeouts are.
package struct AnswerDeadline: Sendable {
    package var within: Duration
    package var response: ServerResponse

    package init(within: Duration, response: ServerResponse) {
        self.within = within
        self.response = response
    }
}

/// Something that answers requests.
///
/// The server resolves each request once, from its head, into a `ResolvedRoute` (its policy, its
/// name and what answers it), which travels with the request: one lookup per request, and one
/// table across a reload (docs/operations.md, "Signals"). A handler that routes nothing itself
/// implements `handle` (and `policy`, `routeName` if it wants them); `Router` and the
/// gateway's swappable routes implement `resolve`.
package protocol HTTPHandler: Sendable {
    func handle(_ request: ServerRequest) async -> ServerResponse
    /// The policy for a path; by default 512 KiB and plain-text errors.
    func policy(forPath path: String) -> RequestPolicy
    /// The route a path falls under (the route's own path), for span names: never the request's
    /// path itself, which may hold a device token.
    func routeName(forPath path: String) -> String?
    /// The route of a request with this method and path.
    func resolve(method: HTTPMethod, path: String) -> ResolvedRoute
    /// The renderer of the errors a listener answers before any route is known: a request the
    /// parser cannot read (400), one not received in time (408), a server too busy (503).
    var connectionErrors: any ErrorRenderer { get }
}

extension HTTPHandler {
    package func policy(forPath path: String) -> RequestPolicy { RequestPolicy(maxBodyBytes: 512 * 1024, errors: PlainTextErrors()) }
    package var connectionErrors: any ErrorRenderer { PlainTextErrors() }
    package func routeName(forPath path: String) -> String? { nil }
    /// A handler that does not route answers every request itself. (There is no default `handle`:
    /// a conformer that implemented neither would call itself for ever.)
    package func resolve(method: HTTPMethod, path: String) -> ResolvedRoute {
        ResolvedRoute(policy: policy(forPath: path), name: routeName(forPath: path), responder: .whole(self))
    }
}

/// What a request was resolved to at its head: what the server applies to it (`policy`), what
/// its span is named (`name`) and what answers it.
package struct ResolvedRoute: Sendable {
    package enum Responder: Sendable {
        /// A route's handler; what it throws is rendered by the route's renderer, and an error that is
        /// no `HTTPResponseError` is logged to `logger`.
        case handler(Router.Handler, logger: Logger?)
        /// No handler: this error is the answer (404, 405).
        case error(ServerError)
        /// A handler that does not route (a fake, the metrics listener).
        case whole(any HTTPHandler)
    }

    package var policy: RequestPolicy
    package var name: String?
    package var responder: Responder

    package init(policy: RequestPolicy, name: String?, responder: Responder) {
        self.policy = policy
        self.name = name
        self.responder = responder
    }

    package func respond(to request: ServerRequest) async -> ServerResponse {
        switch responder {
        case .handler(let handler, let logger):
            do {
                return try await handler(request)
            } catch {
                return ErrorResponder.response(for: error, errors: policy.errors, logger: logger)
            }
        case .error(let error):
            return policy.errors.render(error)
        case .whole(let handler):
            return await handler.handle(request)
        }
    }
}
