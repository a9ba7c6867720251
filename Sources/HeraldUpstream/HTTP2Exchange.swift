import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One request on an HTTP/2 connection, as handed to the connection's event loop: what it sends,
/// the slot its answer fills, and its deadline. `HTTP2Streams` gives it a stream
/// (`HTTP2StreamsStateMachine` keeps the answer read so far); the slot takes the first answer
/// only, so cancellation may fail it from outside at any time. `streamID` and `abandoned` are
/// touched only on the connection's event loop.
final class HTTP2Exchange: @unchecked Sendable {
    let requestHeaders: HPACKHeaders
    let requestBody: ByteBuffer?
    let answer = ResponseSlot<UpstreamResponse>()
    /// When it fails unanswered, and the `request_timeout` that says so.
    let deadline: NIODeadline
    let timeout: Duration
    /// Its stream, once `HTTP2Streams` has opened one.
    var streamID: HTTP2StreamID?
    /// Given up on (cancellation) before it was started: it is not started.
    var abandoned = false

    init(headers: HPACKHeaders, body: ByteBuffer?, deadline: NIODeadline, timeout: Duration) {
        self.requestHeaders = headers
        self.requestBody = body
        self.deadline = deadline
        self.timeout = timeout
    }

    /// The request's headers for HTTP/2: pseudo-headers first, names in lower case, each field
    /// checked (`InvalidHeaderField`: the connection does not validate them again).
    static func requestHeaders(_ request: UpstreamRequest, authority: String, path: String) throws(InvalidHeaderField) -> HPACKHeaders {
        guard HTTPFieldSyntax.isFieldValue(path), HTTPFieldSyntax.isFieldValue(authority) else {
            throw InvalidHeaderField(name: ":path")
        }
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 5)
        headers.add(name: ":method", value: request.method.rawValue)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        // Values that differ from one request to the next are sent literally instead of entering
        // HPACK's dynamic table (RFC 7541 §6.2.2): each would push out an entry that does repeat,
        // such as the provider token in `authorization`, which would then be sent (and
        // Huffman-encoded) in full again. `:path` holds the device token; the request names its
        // own (`UpstreamRequest.changingHeaders`), and `content-length` changes with every body.
        headers.add(name: ":path", value: path, indexing: .nonIndexable)
        var hasUserAgent = false
        for (name, value) in request.headers {
            // Checked here, in the one pass that builds the block (`InvalidHeaderField`).
            guard HTTPFieldSyntax.isToken(name), HTTPFieldSyntax.isFieldValue(value) else { throw InvalidHeaderField(name: name) }
            let lower = name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? name.lowercased() : name
            if Self.connectionSpecific.contains(lower) { continue }
            if lower == "user-agent" { hasUserAgent = true }
            let changing = lower == "content-length" || request.changingHeaders.contains(lower)
            headers.add(name: lower, value: value, indexing: changing ? .nonIndexable : .indexable)
        }
        if !hasUserAgent { headers.add(name: "user-agent", value: HeraldVersion.userAgent) }
        return headers
    }

    /// Headers HTTP/2 forbids (RFC 9113 §8.2.2); `Host` becomes `:authority`.
    private static let connectionSpecific: Set<String> = [
        "connection", "host", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    ]
}
