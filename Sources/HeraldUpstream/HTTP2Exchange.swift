import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One request on an HTTP/2 connection: what it sends, and the answer collected so far (at most
/// `maxBodyBytes` of its body). `HTTP2Streams` gives it a stream, feeds it that stream's frames and
/// fails it at its deadline; completing `promise` twice is ignored, so cancellation may fail it from
/// outside at any time. Its state is touched only on the connection's event loop.
final class HTTP2Exchange: @unchecked Sendable {
    let requestHeaders: HPACKHeaders
    let requestBody: ByteBuffer?
    let maxBodyBytes: Int
    let promise: EventLoopPromise<UpstreamResponse>
    /// When it fails unanswered, and the `request_timeout` that says so.
    let deadline: NIODeadline
    let timeout: Duration
    /// Its stream, once `HTTP2Streams` has opened one.
    var streamID: HTTP2StreamID?
    /// Given up on (deadline, cancellation) before it was started: it is not started.
    var abandoned = false
    /// DATA bytes received on its stream since the last stream WINDOW_UPDATE.
    var unacknowledged = 0
    private var status: Int?
    private var headers = HTTPHeaders()
    private var body = ByteBuffer()

    init(
        headers: HPACKHeaders, body: ByteBuffer?, maxBodyBytes: Int, promise: EventLoopPromise<UpstreamResponse>,
        deadline: NIODeadline, timeout: Duration
    ) {
        self.requestHeaders = headers
        self.requestBody = body
        self.maxBodyBytes = maxBodyBytes
        self.promise = promise
        self.deadline = deadline
        self.timeout = timeout
    }

    enum Progress {
        case reading
        case done
        /// The answer cannot be read: fail with this, and reset the stream.
        case failed(UpstreamConnectionError)
    }

    /// Takes one frame of the answer.
    func receive(_ payload: HTTP2Frame.FramePayload) -> Progress {
        switch payload {
        case .headers(let frame):
            if status == nil {
                guard let text = frame.headers.first(name: ":status"), let code = Int(text), (100..<600).contains(code) else {
                    return .failed(.malformedResponse)
                }
                if code < 200 { return .reading }  // informational: the real answer follows
                status = code
                for (name, value, _) in frame.headers where !name.hasPrefix(":") { headers.add(name: name, value: value) }
            }
            return frame.endStream ? finish() : .reading
        case .data(let frame):
            if case .byteBuffer(var chunk) = frame.data {
                let room = maxBodyBytes - body.readableBytes
                if room > 0, var slice = chunk.readSlice(length: min(room, chunk.readableBytes)) { body.writeBuffer(&slice) }
            }
            return frame.endStream ? finish() : .reading
        case .rstStream(let code):
            return .failed(.reset(code))
        default:
            return .reading
        }
    }

    private func finish() -> Progress {
        guard let status else { return .failed(.malformedResponse) }
        promise.succeed(UpstreamResponse(status: status, headers: headers, body: body))
        return .done
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
