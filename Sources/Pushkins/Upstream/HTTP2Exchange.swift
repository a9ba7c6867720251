import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One request on its own HTTP/2 stream: it writes the request once the stream is active, reads
/// the answer (keeping at most `maxBodyBytes` of its body) and completes `promise`. A stream that
/// closes or fails first fails it; completing a promise twice is ignored, so the deadline and
/// cancellation may fail it from outside at any time.
final class HTTP2Exchange: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let requestHeaders: HPACKHeaders
    private let requestBody: ByteBuffer?
    private let maxBodyBytes: Int
    private let promise: EventLoopPromise<UpstreamResponse>
    private var sent = false
    private var status: Int?
    private var headers = HTTPHeaders()
    private var body = ByteBuffer()

    init(headers: HPACKHeaders, body: ByteBuffer?, maxBodyBytes: Int, promise: EventLoopPromise<UpstreamResponse>) {
        self.requestHeaders = headers
        self.requestBody = body
        self.maxBodyBytes = maxBodyBytes
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context: context)
        context.fireChannelActive()
    }

    private func send(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        let hasBody = (requestBody?.readableBytes ?? 0) > 0
        context.write(wrapOutboundOut(.headers(.init(headers: requestHeaders, endStream: !hasBody))), promise: nil)
        if hasBody, let requestBody {
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(requestBody), endStream: true))), promise: nil)
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if status == nil {
                guard let text = frame.headers.first(name: ":status"), let code = Int(text), (100..<600).contains(code) else {
                    fail(.malformedResponse, context: context)
                    return
                }
                if code < 200 { return }  // informational: the real answer follows
                status = code
                for (name, value, _) in frame.headers where !name.hasPrefix(":") { headers.add(name: name, value: value) }
            }
            if frame.endStream { finish(context: context) }
        case .data(let frame):
            if case .byteBuffer(var chunk) = frame.data {
                let room = maxBodyBytes - body.readableBytes
                if room > 0, var slice = chunk.readSlice(length: min(room, chunk.readableBytes)) { body.writeBuffer(&slice) }
            }
            if frame.endStream { finish(context: context) }
        case .rstStream(let code):
            fail(.reset(code), context: context)
        default:
            break
        }
    }

    private func finish(context: ChannelHandlerContext) {
        guard let status else {
            fail(.malformedResponse, context: context)
            return
        }
        promise.succeed(UpstreamResponse(status: status, headers: headers, body: body))
    }

    private func fail(_ error: UpstreamConnectionError, context: ChannelHandlerContext) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(UpstreamConnectionError.closedUnanswered)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    /// The request's headers for HTTP/2: pseudo-headers first, names in lower case.
    static func requestHeaders(_ request: UpstreamRequest, authority: String, path: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 5)
        headers.add(name: ":method", value: request.method.rawValue)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: path, indexing: .nonIndexable)
        var hasUserAgent = false
        for (name, value) in request.headers {
            let lower = name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? name.lowercased() : name
            if Self.connectionSpecific.contains(lower) { continue }
            if lower == "user-agent" { hasUserAgent = true }
            headers.add(name: lower, value: value, indexing: Self.changesPerRequest.contains(lower) ? .nonIndexable : .indexable)
        }
        if !hasUserAgent { headers.add(name: "user-agent", value: HeraldVersion.userAgent) }
        return headers
    }

    /// Headers whose values differ from one request to the next are sent literally instead of
    /// entering HPACK's dynamic table (RFC 7541 §6.2.2): each would push out an entry that does
    /// repeat, such as the provider token in `authorization`, and that entry would then be sent
    /// (and Huffman-encoded) in full again. `:path` holds the device token.
    private static let changesPerRequest: Set<String> = ["apns-id", "apns-expiration", "apns-collapse-id", "content-length"]

    /// Headers HTTP/2 forbids (RFC 9113 §8.2.2); `Host` becomes `:authority`.
    private static let connectionSpecific: Set<String> = [
        "connection", "host", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    ]
}
