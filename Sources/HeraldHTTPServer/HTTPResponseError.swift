package import HeraldCore
package import Logging
import NIOCore
package import NIOHTTP1

/// An error that is an HTTP answer: every request error of every front end conforms, and
/// `ErrorResponder` turns one into a response with the route's `ErrorRenderer`
/// (docs/architecture.md, "Errors").
package protocol HTTPResponseError: Error, Sendable {
    var status: HTTPResponseStatus { get }
    /// The machine-readable code, in its front end's words; a `ServerError`'s is its kind, which
    /// the renderer translates. Renderers without codes ignore it.
    var errcode: String { get }
    /// For people: what was wrong.
    var message: String { get }
    /// More fields of the body (a notify 502's `rejected`).
    var extraFields: JSONObject { get }
    /// More headers (`Allow` on a 405).
    var headers: HTTPHeaders { get }
}

extension HTTPResponseError {
    package var extraFields: JSONObject { [:] }
    package var headers: HTTPHeaders { HTTPHeaders() }
}

/// How a route writes its errors: each front end supplies its own (Gateway/FrontEnds), and the
/// server applies the route's to every error of a request on it, its own included
/// (docs/architecture.md, "Errors"). The server knows no front end: its own errors are
/// `ServerError`s, which a renderer gives its front end's codes.
package protocol ErrorRenderer: Sendable {
    func render(_ error: any HTTPResponseError) -> ServerResponse
}

/// The server's own errors, named by what happened.
package struct ServerError: HTTPResponseError {
    package enum Kind: String, Sendable, CaseIterable {
        /// No route for the path (404).
        case notFound = "not_found"
        /// The route takes other methods (405, with `Allow`).
        case methodNotAllowed = "method_not_allowed"
        /// A body over the route's limit (413).
        case tooLarge = "too_large"
        /// A request the HTTP parser cannot read (400).
        case malformed
        /// A request not received within `request_read_timeout` (408).
        case requestTimeout = "request_timeout"
        /// Over the connection or body budget (503, with `Retry-After`).
        case busy
        /// A part of the gateway that is not running (503).
        case unavailable
        /// A handler failed with an error that is no `HTTPResponseError`: a bug (500).
        case internalError = "internal_error"
    }

    package var kind: Kind
    package var status: HTTPResponseStatus
    package var message: String
    package var headers: HTTPHeaders

    /// Its kind: a renderer translates it into its front end's code.
    package var errcode: String { kind.rawValue }

    package init(_ kind: Kind, _ status: HTTPResponseStatus, _ message: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.kind = kind
        self.status = status
        self.message = message
        self.headers = headers
    }

    package static let notFound = ServerError(.notFound, .notFound, "Unrecognized request")
    package static let malformed = ServerError(.malformed, .badRequest, "Malformed HTTP request")
    package static let requestTimeout = ServerError(.requestTimeout, .requestTimeout, "The request was not received in time")
    package static let internalError = ServerError(.internalError, .internalServerError, "Internal server error")

    package static func methodNotAllowed(allow: [String]) -> ServerError {
        var headers = HTTPHeaders()
        headers.add(name: "Allow", value: allow.joined(separator: ", "))
        return ServerError(.methodNotAllowed, .methodNotAllowed, "Unrecognized request", headers: headers)
    }

    package static func tooLarge(limit: Int) -> ServerError {
        ServerError(.tooLarge, .payloadTooLarge, "Request body exceeds \(limit) bytes")
    }

    package static var busy: ServerError {
        var headers = HTTPHeaders()
        headers.add(name: "Retry-After", value: "1")
        return ServerError(.busy, .serviceUnavailable, "The server is busy; retry shortly", headers: headers)
    }

    package static func unavailable(_ message: String) -> ServerError {
        ServerError(.unavailable, .serviceUnavailable, message)
    }
}

/// The server's renderer where nothing else is named (a fake upstream, the metrics listener): the
/// message and a newline as `text/plain`.
package struct PlainTextErrors: ErrorRenderer {
    package init() {}

    package func render(_ error: any HTTPResponseError) -> ServerResponse {
        var response = ServerResponse(status: error.status, body: ByteBuffer(string: error.message + "\n"))
        response.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        for (name, value) in error.headers { response.headers.add(name: name, value: value) }
        return response
    }
}

/// Turns any error a handler throws into its response. An error that is not an
/// `HTTPResponseError` is a bug: it is logged and answered 500 without details.
package enum ErrorResponder {
    package static func response(for error: any Error, errors renderer: any ErrorRenderer, logger: Logger? = nil) -> ServerResponse {
        guard let error = error as? any HTTPResponseError else {
            logger?.error("Unhandled error in a request handler", metadata: ["error": "\(error)"])
            return renderer.render(ServerError.internalError)
        }
        return renderer.render(error)
    }
}
