import HeraldCore
import NIOCore
import NIOHTTP1

/// The one handler of a keep-alive HTTP/1.1 connection of `HTTP1Upstream`: it writes a request
/// handed to it and fills the request's answer slot with the answer, saying whether the connection
/// may carry another request. What the connection is doing, and every rule about it, lives in
/// `HTTP1ExchangeStateMachine`; this handler turns the channel's events into its calls and its
/// actions into writes, answers and the timer. The connection's one `LoopTimer` watches the
/// request's deadline on the event loop's clock (`EventLoop.now`), so a test drives it by advancing
/// an embedded loop's time. A slot takes the first answer only, so cancellation may fail it from
/// outside at any time.
final class HTTP1Exchange: ChannelDuplexHandler, LoopTimerOwner {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = Request
    typealias OutboundOut = HTTPClientRequestPart

    struct Request: Sendable {
        let head: HTTPRequestHead
        let body: ByteBuffer?
        let answer: ResponseSlot<Received>
        /// When it fails unanswered, and the `request_timeout` that says so.
        let deadline: NIODeadline
        let timeout: Duration
    }

    struct Received: Sendable {
        let response: UpstreamResponse
        /// The server keeps the connection open for another request.
        let reusable: Bool
    }

    private var machine: HTTP1ExchangeStateMachine<ResponseSlot<Received>>
    var timer: LoopTimer

    /// `clock` runs the request's deadline (the loop's own, but in tests).
    init(maxBodyBytes: Int, clock: any LoopClock) {
        machine = HTTP1ExchangeStateMachine(maxBodyBytes: maxBodyBytes)
        timer = LoopTimer(clock: clock)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        switch machine.send(request.answer, deadline: request.deadline, timeout: request.timeout) {
        case .refuse(let waiter):
            waiter.fail(UpstreamConnectionError.closedUnanswered)  // one request at a time
            promise?.succeed()
        case .write(let deadline):
            armTimer(by: deadline, context: context)
            context.write(wrapOutboundOut(.head(request.head)), promise: nil)
            if let requestBody = request.body, requestBody.readableBytes > 0 {
                context.write(wrapOutboundOut(.body(.byteBuffer(requestBody))), promise: nil)
            }
            context.write(wrapOutboundOut(.end(nil)), promise: promise)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response): machine.head(response)
        case .body(let chunk): machine.body(chunk)
        case .end:
            guard case .answer(let waiter, let response, let reusable) = machine.end() else { return }
            waiter.succeed(Received(response: response, reusable: reusable))
            if !reusable { context.close(promise: nil) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent, machine.idleTimeout() {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer.cancel()
        machine.close()?.fail(UpstreamConnectionError.closedUnanswered)
        context.fireChannelInactive()
    }

    /// Fails the request whose deadline passed (and closes the connection), or says when it is due.
    func timerFired(context: ChannelHandlerContext) -> NIODeadline? {
        switch machine.timerFired(now: timer.now(context.eventLoop)) {
        case .none: return nil
        case .rearm(let deadline): return deadline
        case .expire(let waiter, let timeout):
            waiter.fail(Deadline.Exceeded(after: timeout))
            context.close(promise: nil)
            return nil
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        machine.close()?.fail(error)
        context.close(promise: nil)
    }
}
