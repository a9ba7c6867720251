import HeraldCore
import NIOCore
import NIOHTTP2

/// The requests in flight on one HTTP/2 connection, each on a stream of its own, handled on the
/// connection's event loop without a channel per stream (docs/architecture.md, "The upstream-call
/// path"). Which stream carries which request, each one's deadline and answer, and the window owed
/// to the server live in `HTTP2StreamsStateMachine`; this handler turns the connection's events
/// into its calls and its actions into frames, answers and the timer. A request fails when its
/// stream is reset, closed unanswered or never sent (SwiftNIO holds streams over the server's
/// `MAX_CONCURRENT_STREAMS` and drops them on GOAWAY), and when unanswered by its deadline
/// (`Deadline.Exceeded`, its stream reset): one `LoopTimer` for the connection, armed by the
/// earliest deadline in flight on the event loop's clock (`EventLoop.now`), so a test drives it by
/// advancing an embedded loop's time. Frames of the connection itself go on to the next handler.
final class HTTP2Streams: ChannelDuplexHandler, LoopTimerOwner {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// The connection has used its last stream id: it retires like one the server sent GOAWAY on.
    struct StreamIDsExhausted: Sendable {}

    private var context: ChannelHandlerContext?
    private var machine: HTTP2StreamsStateMachine<ResponseSlot<UpstreamResponse>>
    var timer: LoopTimer

    /// `clock` runs the requests' deadlines (the loop's own, but in tests).
    init(firstStreamID: HTTP2StreamID = 1, maxBodyBytes: Int, clock: any LoopClock) {
        timer = LoopTimer(clock: clock)
        machine = HTTP2StreamsStateMachine(firstStreamID: firstStreamID, maxBodyBytes: maxBodyBytes)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        failAll()
        self.context = nil
    }

    /// Opens a stream for `exchange` and sends its request.
    func start(_ exchange: HTTP2Exchange) {
        guard !exchange.abandoned else { return }
        guard let context else {
            exchange.answer.fail(UpstreamConnectionError.closedUnanswered)
            return
        }
        switch machine.open(exchange.answer, deadline: exchange.deadline, timeout: exchange.timeout, active: context.channel.isActive) {
        case .refuse(let answer):
            answer.fail(UpstreamConnectionError.closedUnanswered)
        case .exhausted(let answer):
            // Retired before the request fails: its caller, resumed on another thread, sends again
            // at once and must find a new connection, not this one.
            context.fireUserInboundEventTriggered(StreamIDsExhausted())
            answer.fail(UpstreamConnectionError.closedUnanswered)
        case .open(let id, let deadline):
            exchange.streamID = id
            armTimer(by: deadline, context: context)
            send(exchange, on: id, context: context)
        }
    }

    private func send(_ exchange: HTTP2Exchange, on id: HTTP2StreamID, context: ChannelHandlerContext) {
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
        written.futureResult.whenFailure { error in streams.value.machine.streamEnded(id)?.fail(error) }
    }

    /// The request's caller gave up: it is not started, or its stream is reset.
    func abandon(_ exchange: HTTP2Exchange) {
        exchange.abandoned = true
        guard let id = exchange.streamID, machine.abandon(id) else { return }
        reset(id)
    }

    /// Fails the requests whose deadline passed; the earliest deadline left.
    func timerFired(context: ChannelHandlerContext) -> NIODeadline? {
        guard self.context != nil else { return nil }
        let (expired, next) = machine.timerFired(now: timer.now(context.eventLoop))
        for gone in expired {
            gone.waiter.fail(Deadline.Exceeded(after: gone.timeout))
            reset(gone.id)
        }
        return next
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.streamID != .rootStream else {
            context.fireChannelRead(data)
            return
        }
        if case .data(let payload) = frame.payload {
            let length = payload.data.readableBytes + (payload.paddingBytes.map { $0 + 1 } ?? 0)
            giveBack(machine.received(length, on: frame.streamID, endStream: payload.endStream), on: frame.streamID, context: context)
        }
        switch machine.read(frame.payload, on: frame.streamID) {
        case .none: break
        case .answer(let answer, let response): answer.succeed(response)
        case .fail(let answer, let error, let open):
            answer.fail(error)
            if open { reset(frame.streamID) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent, let answer = machine.streamEnded(closed.streamID) {
            answer.fail(closed.reason.map { UpstreamConnectionError.reset($0) } ?? .closedUnanswered)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An error on one stream is that stream's; anything else is the connection's.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            machine.streamEnded(streamError.streamID)?.fail(streamError.baseError)
            return
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll()
        context.fireChannelInactive()
    }

    /// Sends the WINDOW_UPDATEs the machine says are owed.
    private func giveBack(_ owed: (connection: Int?, stream: Int?), on id: HTTP2StreamID, context: ChannelHandlerContext) {
        if let increment = owed.connection {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
        }
        if let increment = owed.stream {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
        }
        if owed.connection != nil || owed.stream != nil { context.flush() }
    }

    private func reset(_ id: HTTP2StreamID) {
        guard let context, !machine.isClosed else { return }
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
    }

    private func failAll() {
        timer.cancel()
        for answer in machine.close() { answer.fail(UpstreamConnectionError.closedUnanswered) }
    }
}
