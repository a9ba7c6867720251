import HeraldCore
import NIOCore
import NIOHTTP2

/// The requests in flight on one HTTP/2 connection, each on a stream of its own, handled on the
/// connection's event loop without a channel per stream (docs/architecture.md, "The upstream-call
/// path"). It opens a stream per `HTTP2Exchange` (client stream ids: odd, increasing), routes each
/// stream's frames to its exchange, and fails an exchange whose stream is reset, closed unanswered
/// or never sent (SwiftNIO holds streams over the server's `MAX_CONCURRENT_STREAMS` and drops them
/// on GOAWAY), and fails one unanswered by its deadline with `Deadline.Exceeded` and resets its
/// stream: one `LoopTimer` for the connection, armed by the earliest deadline in flight. It gives the server back its flow-control window as answers are read, on the
/// connection and on each stream. Frames of the connection itself go on to the next handler.
final class HTTP2Streams: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// The connection has used its last stream id: it retires like one the server sent GOAWAY on.
    struct StreamIDsExhausted: Sendable {}

    /// Bytes read before the window is given back: half of HTTP/2's initial window (RFC 9113 §6.9.2).
    static let windowUpdateThreshold = 32_768

    private var context: ChannelHandlerContext?
    /// The next stream's id (an `Int`: one past the last id must not trap).
    private var nextStreamID: Int
    private var exchanges: [HTTP2StreamID: HTTP2Exchange] = [:]
    private var closed = false
    /// DATA bytes received on the connection since its last WINDOW_UPDATE.
    private var unacknowledged = 0
    private var timer = LoopTimer()

    init(firstStreamID: HTTP2StreamID = 1) { nextStreamID = Int(firstStreamID) }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        failAll()
        self.context = nil
    }

    /// Opens a stream for `exchange` and sends its request.
    func start(_ exchange: HTTP2Exchange) {
        guard !exchange.abandoned else { return }
        guard let context, !closed, context.channel.isActive else {
            exchange.promise.fail(UpstreamConnectionError.closedUnanswered)
            return
        }
        guard nextStreamID <= Int(HTTP2StreamID.maxID) else {
            exchange.promise.fail(UpstreamConnectionError.closedUnanswered)
            context.fireUserInboundEventTriggered(StreamIDsExhausted())
            return
        }
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        exchange.streamID = id
        exchanges[id] = exchange
        arm(by: exchange.deadline, context: context)
        let written = context.eventLoop.makePromise(of: Void.self)
        let body = exchange.requestBody.flatMap { $0.readableBytes > 0 ? $0 : nil }
        let headers = HTTP2Frame(streamID: id, payload: .headers(.init(headers: exchange.requestHeaders, endStream: body == nil)))
        context.write(wrapOutboundOut(headers), promise: body == nil ? written : nil)
        if let body {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: written
            )
        }
        context.flush()
        let streams = NIOLoopBound(self, eventLoop: context.eventLoop)
        written.futureResult.whenFailure { error in streams.value.fail(id, error, reset: false) }
    }

    /// The request's deadline passed or its caller gave up: its stream, if it has one, is reset.
    func abandon(_ exchange: HTTP2Exchange) {
        exchange.abandoned = true
        guard let id = exchange.streamID, exchanges.removeValue(forKey: id) != nil else { return }
        reset(id)
    }

    private func arm(by deadline: NIODeadline, context: ChannelHandlerContext) {
        timer.arm(by: deadline, on: context.eventLoop) {
            let streams = NIOLoopBound(self, eventLoop: context.eventLoop)
            return { streams.value.fireTimer() }
        }
    }

    /// Fails the exchanges whose deadline passed, and arms the timer by the earliest one left.
    private func fireTimer() {
        timer.fired()
        guard let context else { return }
        let now = NIODeadline.now()
        var next: NIODeadline?
        for exchange in exchanges.values {
            if exchange.deadline <= now {
                exchange.promise.fail(Deadline.Exceeded(after: exchange.timeout))
                abandon(exchange)
            } else {
                next = min(next ?? exchange.deadline, exchange.deadline)
            }
        }
        if let next { arm(by: next, context: context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.streamID != .rootStream else {
            context.fireChannelRead(data)
            return
        }
        let exchange = exchanges[frame.streamID]
        if case .data(let payload) = frame.payload {
            acknowledge(payload, on: frame.streamID, of: exchange, context: context)
        }
        guard let exchange else { return }  // abandoned, or unknown
        switch exchange.receive(frame.payload) {
        case .reading:
            break
        case .done:
            exchanges.removeValue(forKey: frame.streamID)
        case .failed(let error):
            let open: Bool
            if case .reset = error { open = false } else { open = true }
            fail(frame.streamID, error, reset: open)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent, exchanges[closed.streamID] != nil {
            let error = closed.reason.map { UpstreamConnectionError.reset($0) } ?? .closedUnanswered
            fail(closed.streamID, error, reset: false)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An error on one stream is that stream's; anything else is the connection's.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            fail(streamError.streamID, streamError.baseError, reset: false)
            return
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll()
        context.fireChannelInactive()
    }

    /// Gives back the window the server used for `payload`: on the connection always, and on its
    /// stream while the answer is still coming (a WINDOW_UPDATE on a closed stream is an error).
    private func acknowledge(
        _ payload: HTTP2Frame.FramePayload.Data, on id: HTTP2StreamID, of exchange: HTTP2Exchange?, context: ChannelHandlerContext
    ) {
        let length = payload.data.readableBytes + (payload.paddingBytes.map { $0 + 1 } ?? 0)
        guard length > 0 else { return }
        unacknowledged += length
        var flush = false
        if unacknowledged >= Self.windowUpdateThreshold {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledged))),
                promise: nil)
            unacknowledged = 0
            flush = true
        }
        if let exchange, !payload.endStream {
            exchange.unacknowledged += length
            if exchange.unacknowledged >= Self.windowUpdateThreshold {
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: exchange.unacknowledged))),
                    promise: nil)
                exchange.unacknowledged = 0
                flush = true
            }
        }
        if flush { context.flush() }
    }

    private func fail(_ id: HTTP2StreamID, _ error: any Error, reset open: Bool) {
        guard let exchange = exchanges.removeValue(forKey: id) else { return }
        exchange.promise.fail(error)
        if open { reset(id) }
    }

    private func reset(_ id: HTTP2StreamID) {
        guard let context, !closed else { return }
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
    }

    private func failAll() {
        timer.cancel()
        closed = true
        let all = exchanges.values
        exchanges = [:]
        for exchange in all { exchange.promise.fail(UpstreamConnectionError.closedUnanswered) }
    }
}
