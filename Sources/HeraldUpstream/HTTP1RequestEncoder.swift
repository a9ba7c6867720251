import NIOCore
import NIOHTTP1

/// Writes an HTTP/1.1 request of `HTTP1Upstream` (its head, a body, its end) as one buffer of its
/// exact size, in place of SwiftNIO's `HTTPRequestEncoder`.
///
/// SwiftNIO's encoder writes the head into a 256-byte buffer that a request with a VAPID or OAuth
/// `Authorization` outgrows twice, then hands the body on as a second buffer, and TLS seals each
/// buffer as a record of its own: allocations and an extra TLS record a request, which this one
/// does not make (bench/allocation-limits counts them). It is no general encoder: a request is
/// framed by the `Content-Length` its head carries (`HTTP1Upstream.requestHead` sets one; a head
/// without one gets the body's), with no trailers, and its fields and target were checked before
/// it was sent for (`InvalidHeaderField`, `UpstreamConnector.target`), which SwiftNIO's header
/// validator did again.
/// The response decoder sits after it in the pipeline and sees each request part as it passes, to
/// know the request's method.
final class HTTP1RequestEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = IOData

    /// A part this encoder cannot frame: trailers, a file region, or a body or end without a head.
    struct Unframable: Error, Equatable {}

    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    /// The promises of the parts held back, completed with the request's one write.
    private var held: EventLoopPromise<Void>?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            guard self.head == nil else { return refuse(promise) }
            self.head = head
            hold(promise)
        case .body(.byteBuffer(let chunk)):
            guard self.head != nil else { return refuse(promise) }
            body.setOrWriteImmutableBuffer(chunk)
            hold(promise)
        case .body(.fileRegion):
            refuse(promise)
        case .end(let trailers):
            guard let head, trailers?.isEmpty ?? true else { return refuse(promise) }
            let bytes = Self.encode(head, body: body, allocator: context.channel.allocator)
            self.head = nil
            body = nil
            let written = held
            held = nil
            if let written, let promise { promise.futureResult.cascade(to: written) }
            context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: promise ?? written)
        }
    }

    private func hold(_ promise: EventLoopPromise<Void>?) {
        guard let promise else { return }
        if let held { held.futureResult.cascade(to: promise) } else { held = promise }
    }

    /// Fails the part, and what was held of its request, which is dropped.
    private func refuse(_ promise: EventLoopPromise<Void>?) {
        promise?.fail(Unframable())
        held?.fail(Unframable())
        held = nil
        head = nil
        body = nil
    }

    /// The request line, the fields, a `Content-Length` if the head has none, and the body.
    static func encode(_ head: HTTPRequestHead, body: ByteBuffer?, allocator: ByteBufferAllocator) -> ByteBuffer {
        let bodyBytes = body?.readableBytes ?? 0
        let hasLength = head.headers.contains(name: "content-length")
        let version = head.version == .http1_1 ? "HTTP/1.1" : "HTTP/\(head.version.major).\(head.version.minor)"
        var size = head.method.rawValue.utf8.count + 1 + head.uri.utf8.count + 1 + version.utf8.count + 2 + 2 + bodyBytes
        for (name, value) in head.headers { size += name.utf8.count + 2 + value.utf8.count + 2 }
        if !hasLength { size += "content-length: ".utf8.count + 20 + 2 }
        var buffer = allocator.buffer(capacity: size)
        buffer.writeString(head.method.rawValue)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(head.uri)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(version)
        buffer.writeCRLF()
        for (name, value) in head.headers {
            buffer.writeString(name)
            buffer.writeInteger(UInt8(ascii: ":"))
            buffer.writeInteger(UInt8(ascii: " "))
            buffer.writeString(value)
            buffer.writeCRLF()
        }
        if !hasLength {
            buffer.writeString("content-length: ")
            buffer.writeString(String(bodyBytes))
            buffer.writeCRLF()
        }
        buffer.writeCRLF()
        if let body { buffer.writeImmutableBuffer(body) }
        return buffer
    }
}

extension ByteBuffer {
    fileprivate mutating func writeCRLF() {
        writeInteger(UInt16(0x0D0A))
    }
}
