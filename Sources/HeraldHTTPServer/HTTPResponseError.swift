import HeraldCore
import Logging
import NIOCore
import NIOHTTP1

/// An error that is an HTTP answer: every request error of every front end conforms, and
/// `ErrorResponder` is the one place that turns one into a response, in the dialect of the route
/// (docs/architecture.md, "Errors").
package protocol HTTPResponseError: Error, Sendable {
    var status: HTTPResponseStatus { get }
    /// The machine-readable code (`M_BAD_JSON`); dialects without one ignore it.
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

/// How a front end writes its errors.
package enum ErrorDialect: Sendable, Hashable {
    /// `{"errcode": …, "error": …, …extra}`: the Matrix push gateway API and Herald's own routes.
    case matrix
    /// `{"code": <status>, "message": …}`: gorush's API.
    case gorush
    /// The message and a newline as `text/plain`: the Web Push relay, as toot-relay answers.
    case plainText
}

/// The gateway's own request errors (routing, limits, availability).
package struct GatewayError: HTTPResponseError {
    package var status: HTTPResponseStatus
    package var errcode: String
    package var message: String
    package var headers: HTTPHeaders

    package init(_ status: HTTPResponseStatus, _ errcode: String, _ message: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.errcode = errcode
        self.message = message
        self.headers = headers
    }

    package static let notFound = GatewayError(.notFound, "M_UNRECOGNIZED", "Unrecognized request")

    package static func methodNotAllowed(allow: [String]) -> GatewayError {
        var headers = HTTPHeaders()
        headers.add(name: "Allow", value: allow.joined(separator: ", "))
        return GatewayError(.methodNotAllowed, "M_UNRECOGNIZED", "Unrecognized request", headers: headers)
    }

    package static func tooLarge(limit: Int) -> GatewayError {
        GatewayError(.payloadTooLarge, "M_TOO_LARGE", "Request body exceeds \(limit) bytes")
    }

    package static func unavailable(_ message: String) -> GatewayError {
        GatewayError(.serviceUnavailable, "M_UNAVAILABLE", message)
    }
}

/// Turns any error a handler throws into its response. An error that is not an
/// `HTTPResponseError` is a bug: it is logged and answered 500 without details.
package enum ErrorResponder {
    package static func response(for error: any Error, dialect: ErrorDialect, logger: Logger? = nil) -> ServerResponse {
        guard let error = error as? any HTTPResponseError else {
            logger?.error("Unhandled error in a request handler", metadata: ["error": "\(error)"])
            return render(GatewayError(.internalServerError, "M_UNKNOWN", "Internal server error"), dialect: dialect)
        }
        return render(error, dialect: dialect)
    }

    static func render(_ error: any HTTPResponseError, dialect: ErrorDialect) -> ServerResponse {
        var response: ServerResponse
        switch dialect {
        case .matrix:
            var body: JSONObject = ["errcode": .string(error.errcode), "error": .string(error.message)]
            for (key, value) in error.extraFields { body[key] = value }
            response = .json(error.status, .object(body))
        case .gorush:
            response = .json(error.status, ["code": .int(Int64(error.status.code)), "message": .string(error.message)])
        case .plainText:
            response = ServerResponse(status: error.status, body: ByteBuffer(string: error.message + "\n"))
            response.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        }
        for (name, value) in error.headers { response.headers.add(name: name, value: value) }
        return response
    }
}
