import NIOCore
import NIOHTTP1
import NIOHTTP2

/// The response to one request on an HTTP/2 stream, as read so far: its `:status` (checked), its
/// other header fields as text, and at most `maxBodyBytes` of its body. A value that
/// `HTTP2StreamsStateMachine` keeps per stream and feeds that stream's frames.
struct HTTP2ResponseReader {
    private let maxBodyBytes: Int
    private var status: Int?
    private var headers = HTTPHeaders()
    private var body = ByteBuffer()

    init(maxBodyBytes: Int) { self.maxBodyBytes = maxBodyBytes }

    enum Progress {
        case reading
        case done(UpstreamResponse)
        /// The response cannot be read: fail with this, and reset the stream unless the server did.
        case failed(UpstreamConnectionError)
    }

    /// Takes one frame of the response.
    mutating func receive(_ payload: HTTP2Frame.FramePayload) -> Progress {
        switch payload {
        case .headers(let frame):
            if status == nil {
                guard let text = frame.headers.first(name: ":status"), let code = Int(text), (100..<600).contains(code) else {
                    return .failed(.malformedResponse)
                }
                if code < 200 { return .reading }  // informational: the real response follows
                status = code
                for (name, value, _) in frame.headers where !name.hasPrefix(":") { headers.add(name: name, value: value) }
            }
            return frame.endStream ? finish() : .reading
        case .data(let frame):
            if case .byteBuffer(let chunk) = frame.data { body.keep(chunk, upTo: maxBodyBytes) }
            return frame.endStream ? finish() : .reading
        case .rstStream(let code):
            return .failed(.reset(code))
        default:
            return .reading
        }
    }

    private func finish() -> Progress {
        guard let status else { return .failed(.malformedResponse) }
        return .done(UpstreamResponse(status: status, headers: headers, body: body))
    }
}
