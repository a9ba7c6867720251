import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1

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

    package init(status: HTTPResponseStatus, headers: HTTPHeaders = HTTPHeaders(), body: ByteBuffer = ByteBuffer()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package static func json(_ status: HTTPResponseStatus, _ value: JSONValue) -> ServerResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        return ServerResponse(status: status, headers: headers, body: ByteBuffer(bytes: JSONWriter.serialize(value)))
    }

    package static func empty(_ status: HTTPResponseStatus = .ok) -> ServerResponse {
        ServerResponse(status: status)
    }
}

/// How the server treats a request before its handler sees it: the body limit and the dialect
/// its errors (413 included) are written in.
package struct RequestPolicy: Sendable {
    package var maxBodyBytes: Int
    package var dialect: ErrorDialect

    package init(maxBodyBytes: Int, dialect: ErrorDialect) {
        self.maxBodyBytes = maxBodyBytes
        self.dialect = dialect
    }
}

/// Something that answers requests.
package protocol HTTPHandler: Sendable {
    func handle(_ request: ServerRequest) async -> ServerResponse
    /// The policy for a path; by default 512 KiB and Matrix errors.
    func policy(forPath path: String) -> RequestPolicy
    /// The route a path falls under (`/relay-to`), for span names: never the path itself, which
    /// may hold a device token.
    func routeName(forPath path: String) -> String?
    /// The dialect of the errors a listener answers before any route is known: a request the
    /// parser cannot read (400), one not received in time (408), a server too busy (503).
    var connectionDialect: ErrorDialect { get }
}

extension HTTPHandler {
    package func policy(forPath path: String) -> RequestPolicy { RequestPolicy(maxBodyBytes: 512 * 1024, dialect: .matrix) }
    package var connectionDialect: ErrorDialect { .matrix }
    package func routeName(forPath path: String) -> String? { nil }
}
