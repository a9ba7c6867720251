import HeraldCore
import NIOCore
import NIOHTTP1

/// The one handler of a keep-alive HTTP/1.1 connection of `HTTP1Upstream`: it writes a request
/// handed to it, reads the answer (keeping at most `maxBodyBytes` of its body) and completes the
/// request's promise, saying whether the connection may carry another request. A connection that
/// closes, fails or sits idle (`IdleStateHandler`) between requests is closed; the request in
/// flight, if any, fails. A request not answered by its deadline fails with `Deadline.Exceeded`
/// and its connection is closed; the connection's one `LoopTimer` watches the deadlines of all its
/// requests. Completing a promise twice is ignored, so cancellation may fail it from outside at any
/// time.
final class HTTP1Exchange: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = Request
    typealias OutboundOut = HTTPClientRequestPart

    struct Request: Sendable {
        let head: HTTPRequestHead
        let body: ByteBuffer?
        let promise: EventLoopPromise<Answer>
        /// When it fails unanswered, and the `request_timeout` that says so.
        let deadline: NIODeadline
        let timeout: Duration
    }

    struct Answer: Sendable {
        let response: UpstreamResponse
        /// The server keeps the connection open for another request.
        let reusable: Bool
    }

    private let maxBodyBytes: Int
    private var current: EventLoopPromise<Answer>?
    /// The deadline of the request in flight, and the timeout it came from.
    private var expiry: (deadline: NIODeadline, timeout: Duration)?
    private var timer = LoopTimer()
    private var head: HTTPResponseHead?
    private var body = ByteBuffer()

    init(maxBodyBytes: Int) { self.maxBodyBytes = maxBodyBytes }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        guard current == nil else {
            request.promise.fail(UpstreamConnectionError.closedUnanswered)  // one request at a time
            promise?.succeed()
            return
        }
        current = request.promise
        expiry = (request.deadline, request.timeout)
        arm(by: request.deadline, context: context)
        head = nil
        body.clear()
        context.write(wrapOutboundOut(.head(request.head)), promise: nil)
        if let requestBody = request.body, requestBody.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(requestBody))), promise: nil)
        }
        context.write(wrapOutboundOut(.end(nil)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response):
            if response.status.code < 200 { return }  // informational: the real answer follows
            head = response
        case .body(var chunk):
            let room = maxBodyBytes - body.readableBytes
            if room > 0, var slice = chunk.readSlice(length: min(room, chunk.readableBytes)) { body.writeBuffer(&slice) }
        case .end:
            guard let promise = current, let head else { return }
            current = nil
            expiry = nil
            self.head = nil
            let response = UpstreamResponse(status: Int(head.status.code), headers: head.headers, body: body)
            body = ByteBuffer()
            promise.succeed(Answer(response: response, reusable: head.isKeepAlive))
            if !head.isKeepAlive { context.close(promise: nil) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent, current == nil {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer.cancel()
        current?.fail(UpstreamConnectionError.closedUnanswered)
        current = nil
        context.fireChannelInactive()
    }

    private func arm(by deadline: NIODeadline, context: ChannelHandlerContext) {
        timer.arm(by: deadline, on: context.eventLoop) {
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            return {
                let (exchange, context) = bound.value
                exchange.fire(context: context)
            }
        }
    }

    /// The timer fired: the request in flight fails if its deadline passed, else the timer waits for it.
    private func fire(context: ChannelHandlerContext) {
        timer.fired()
        guard let promise = current, let expiry else { return }
        guard NIODeadline.now() >= expiry.deadline else {
            arm(by: expiry.deadline, context: context)
            return
        }
        current = nil
        self.expiry = nil
        promise.fail(Deadline.Exceeded(after: expiry.timeout))
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        current?.fail(error)
        current = nil
        context.close(promise: nil)
    }
}
