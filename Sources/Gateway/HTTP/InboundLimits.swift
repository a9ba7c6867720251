import NIOCore
import NIOHTTP1
import Pushkins

/// The limits a listener enforces on the network (docs/configuration.md, `http`).
public struct InboundLimits: Sendable {
    /// Connections open at once; beyond, a new connection is answered 503 and closed.
    public var maxConnections = 10_000
    /// From a request's first byte to its last (head and body): a client trickling its head or its
    /// body (slowloris) is answered 408 and cut.
    public var requestReadTimeout: TimeAmount = .seconds(30)
    /// An idle keep-alive connection is closed after this.
    public var idleTimeout: TimeAmount = .seconds(75)
    /// After a 413, this much of the refused body is read and thrown away.
    public var maxDiscardedBodyBytes = 8 << 20
    /// Request-body bytes held in memory across every connection of every listener sharing it.
    public var bodyBudget: BodyBudget?
    /// On shutdown, how long a connection that has not started its first request gets to start it
    /// (`FirstRequestGrace`).
    public var shutdownFirstRequestWait: TimeAmount = .seconds(2)

    public init() {}
}

/// Request-body bytes held in memory, bounded across connections: past the bound a request is
/// answered 503 with `Retry-After` (the sender tries again when memory is free).
public final class BodyBudget: Sendable {
    public let limit: Int
    private let held = AtomicCounter()

    public init(limit: Int) { self.limit = limit }

    public var inUse: Int { held.current }

    /// Takes `bytes`; false (taking nothing) when that would pass the limit.
    func take(_ bytes: Int) -> Bool {
        if held.add(bytes) > limit {
            held.add(-bytes)
            return false
        }
        return true
    }

    func release(_ bytes: Int) { if bytes > 0 { held.add(-bytes) } }
}

/// Starts a request's read deadline at its first byte (before the HTTP decoder, which says nothing
/// until a head is complete), and answers 408 and closes when the request is not complete in time.
final class RequestReadDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    /// Between a request's last byte and the end of its response: bytes then belong to no request yet.
    private var awaitingRequest = true

    init(timeout: TimeAmount) { self.timeout = timeout }

    /// The 408 answer, written from here, below the HTTP encoder, as raw bytes; made once.
    private static let timeoutResponse: ByteBuffer = {
        let body = ErrorResponder.response(
            for: GatewayError(.requestTimeout, "M_UNKNOWN", "The request was not received in time"), dialect: .matrix
        ).body
        var raw = ByteBuffer(string: "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\n")
        raw.writeString("Content-Length: \(body.readableBytes)\r\n\r\n")
        var copy = body
        raw.writeBuffer(&copy)
        return raw
    }()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if awaitingRequest && timer == nil {
            let channel = context.channel
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: timeout) {
                bound.value.writeAndFlush(NIOAny(Self.timeoutResponse)).whenComplete { _ in channel.close(promise: nil) }
            }
        }
        context.fireChannelRead(data)
    }

    /// The request is complete: no deadline until the next one starts.
    func requestComplete() {
        timer?.cancel()
        timer = nil
        awaitingRequest = false
    }

    /// The response is written: the next bytes start a new request.
    func responseComplete() { awaitingRequest = true }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        context.fireChannelInactive()
    }
}
