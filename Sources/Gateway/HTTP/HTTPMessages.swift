import NIOCore
import NIOHTTP1
import Pushkins

/// A fully read HTTP request.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    public var uri: String
    public var headers: HTTPHeaders
    public var body: ByteBuffer

    public init(method: HTTPMethod, uri: String, headers: HTTPHeaders = HTTPHeaders(), body: ByteBuffer = ByteBuffer()) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    /// The path without the query string.
    public var path: String {
        guard let q = uri.firstIndex(of: "?") else { return uri }
        return String(uri[..<q])
    }
}

/// A complete HTTP response.
public struct HTTPResponse: Sendable {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: ByteBuffer

    public init(status: HTTPResponseStatus, headers: HTTPHeaders = HTTPHeaders(), body: ByteBuffer = ByteBuffer()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(_ status: HTTPResponseStatus, _ value: JSONValue) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: ByteBuffer(bytes: JSONWriter.serialize(value)))
    }

    /// A Matrix-style error: `{"errcode": …, "error": …}`.
    public static func matrixError(_ status: HTTPResponseStatus, _ errcode: String, _ message: String) -> HTTPResponse {
        json(status, ["errcode": .string(errcode), "error": .string(message)])
    }

    public static func empty(_ status: HTTPResponseStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status)
    }
}

/// Something that answers requests.
public protocol HTTPHandler: Sendable {
    func handle(_ request: HTTPRequest) async -> HTTPResponse
}
