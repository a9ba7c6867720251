import HeraldCore
import NIOCore
import NIOHTTP1

/// A request read whole: what a connection hands its task.
struct ReadRequest: Sendable {
    let head: HTTPRequestHead
    let body: ByteBuffer
    /// Its route, resolved once from its head: the policy it was read under and what answers it.
    let route: ResolvedRoute
}

/// What became of a handler's answer.
enum Responded: Sendable {
    /// Written; the connection stays open for the next request.
    case open
    /// Written; the connection closes after it.
    case closing
    /// Not written: the server had answered at the route's deadline (this answer), and the
    /// connection closes.
    case answeredAtDeadline(ServerResponse)
}

/// The last handler of a connection's pipeline (docs/architecture.md, "One thread per request").
///
/// It runs the `ConnectionStateMachine` over the request parts on the event loop, answers what
/// needs no request handler itself (`100 Continue`, a 413, a 503 past the body budget) and hands
/// each complete request to the connection's task, one at a time (`ServerConnection`). The task
/// awaits one continuation per request and writes the answer straight to the pipeline: an async
/// element per request part and an async writer per answer cost more than handling the request.
/// Every path that ends the requests of a connection also closes it (or half-closes it after a
/// 413), so the task can wait for the close.
final class ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler, LoopTimerOwner {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let router: any HTTPHandler
    private let bodyBudget: BodyBudget?
    private let deadline: RequestReadDeadline
    private var context: ChannelHandlerContext?
    private var machine = ConnectionStateMachine()
    private var policy: RequestPolicy
    /// The route of the request being read.
    private var route: ResolvedRoute?
    private var version = HTTPVersion.http1_1
    /// Body bytes of the request in progress taken from the budget.
    private var held = 0
    /// A complete request its task has not taken yet.
    private var ready: ReadRequest?
    /// No request is handed on any more: the connection is closing.
    private var finished = false
    /// The connection is over its listener's `max_connections`: its first request is answered 503.
    private var turningAway = false
    private var waiter: UnsafeContinuation<ReadRequest?, Never>?
    private var writabilityWaiter: CheckedContinuation<Void, Never>?
    /// The connection's one answer-deadline timer (`LoopTimer`): armed by a request, it finds a
    /// later request not yet due when it fires and is armed again for it.
    var timer: LoopTimer
    /// Which of the deadline and the handler answers the request being handled.
    private var answerDeadline = AnswerDeadlineStateMachine<ServerResponse>()
    /// What the server answers at the deadline of the request being handled: the route's answer,
    /// the request's head and id (the answer is made only if it is written).
    private var deadlineAnswer: (deadline: AnswerDeadline, head: HTTPRequestHead, requestId: String)?

    /// `clock` runs the answer deadline (the loop's own, but in tests).
    init(router: any HTTPHandler, limits: InboundLimits, deadline: RequestReadDeadline, clock: any LoopClock) {
        self.timer = LoopTimer(clock: clock)
        self.router = router
        self.bodyBudget = limits.bodyBudget
        self.deadline = deadline
        self.policy = router.policy(forPath: "/")
        machine.minimumDiscard = limits.maxDiscardedBodyBytes
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        end()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A read error, or an error a handler before this one passed on: the connection is done.
        finish(closing: .all)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { resumeWriter() }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !finished || machine.isDraining else { return }
        let action: ConnectionStateMachine.Action
        switch unwrapInboundIn(data) {
        case .head(let head):
            version = head.version
            guard !turningAway else {
                busy(errors: router.connectionErrors)
                return
            }
            let resolved = router.resolve(method: head.method, path: ServerRequest.path(of: head.uri))
            route = resolved
            policy = resolved.policy
            action = machine.head(head, limit: policy.maxBodyBytes)
        case .body(let chunk):
            if let bodyBudget, machine.isReceiving {
                guard bodyBudget.take(chunk.readableBytes) else {
                    busy(errors: policy.errors)
                    return
                }
                held += chunk.readableBytes
            }
            action = machine.body(chunk)
        case .end:
            deadline.requestComplete()
            action = machine.end()
        }
        switch action {
        case .none:
            break
        case .sendContinue(let version):
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .continue))), promise: nil)
        case .close:
            finish(closing: .all)
        case .refuse(let limit, let version):
            // Answer 413, half-close, and give the client five seconds (as nginx lingers) to stop
            // sending before closing; the state machine reads and discards its body meanwhile.
            finish(closing: nil)
            let tooLarge = policy.errors.render(ServerError.tooLarge(limit: limit))
            write(tooLarge, version: version, keepAlive: false, context: context, thenClose: .output)
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
        case .dispatch(let head, let body):
            let request = ReadRequest(
                head: head, body: body, route: route ?? ResolvedRoute(policy: policy, name: nil, responder: .error(.notFound)))
            route = nil
            if let waiter {
                self.waiter = nil
                waiter.resume(returning: request)
            } else {
                ready = request
            }
        }
    }

    /// A connection over `max_connections`: its first request (HTTP allows no answer before one)
    /// is answered 503 with `Retry-After`, and the connection closed.
    func turnAway() {
        guard !finished else { return }
        if case .idle = machine.state, ready == nil {
            turningAway = true
        } else {
            busy(errors: router.connectionErrors)
        }
    }

    /// Gives `continuation` the next complete request, at once or when it has been read; nil once
    /// the connection is closing.
    func nextRequest(_ continuation: UnsafeContinuation<ReadRequest?, Never>) {
        if let request = ready {
            ready = nil
            continuation.resume(returning: request)
        } else if finished {
            continuation.resume(returning: nil)
        } else {
            waiter = continuation
        }
    }

    /// Starts the deadline of the request last handed out: unless its handler answered first, the
    /// server writes `deadline.response` then and the connection closes after it.
    func answer(by deadline: AnswerDeadline, to head: HTTPRequestHead, requestId: String) {
        guard let context, !finished else { return }
        deadlineAnswer = (deadline, head, requestId)
        armTimer(by: answerDeadline.start(due: timer.now(context.eventLoop) + TimeAmount(deadline.within)), context: context)
    }

    /// Writes the deadline's answer of the request past its deadline, or says when it is due.
    func timerFired(context: ChannelHandlerContext) -> NIODeadline? {
        // No request awaits its deadline (answered, or the connection is gone): nothing to do.
        guard self.context != nil, let pending = deadlineAnswer else { return nil }
        let action = answerDeadline.timerFired(now: timer.now(context.eventLoop), responding: machine.isResponding && !finished) {
            var response = pending.deadline.response
            response.headers.replaceOrAdd(name: "X-Request-Id", value: pending.requestId)
            return response
        }
        switch action {
        case .none: return nil
        case .rearm(let due): return due
        case .answer(let response):
            deadlineAnswer = nil
            var closing = pending.head
            closing.headers.replaceOrAdd(name: "Connection", value: "close")
            _ = write(response, to: closing)
            return nil
        }
    }

    /// The handler's answer is about to be written: its deadline can no longer answer first.
    /// False when the server answered at the deadline already, or the connection is gone: the
    /// sender will not hear the handler's answer.
    func claimAnswer() -> Bool {
        deadlineAnswer = nil
        return answerDeadline.claim(open: context != nil && !finished && machine.isResponding)
    }

    /// Writes the handler's answer to the request last handed out, unless the server answered it
    /// at its deadline.
    func respond(_ response: consuming ServerResponse, to head: HTTPRequestHead) -> Responded {
        deadlineAnswer = nil
        if let early = answerDeadline.respond() { return .answeredAtDeadline(early) }
        return write(consume response, to: head) ? .open : .closing
    }

    /// Writes the answer to the request last handed out; false when the connection closes after it.
    private func write(_ response: consuming ServerResponse, to head: HTTPRequestHead) -> Bool {
        bodyBudget?.release(held)
        held = 0
        guard let context, !finished else { return false }
        // The state machine moves on before the answer is written: writing its end makes SwiftNIO's
        // pipeline handler pass on a pipelined next request at once, from inside the write.
        let open = machine.responded(keepAlive: head.isKeepAlive) == .none
        if !open { finish(closing: nil) }
        write(consume response, version: head.version, keepAlive: head.isKeepAlive, context: context, thenClose: open ? nil : .all)
        return open
    }

    /// Resumes `continuation` when the connection can take more output (a client that does not
    /// read its answers stops being read from), or when it closes.
    func whenWritable(_ continuation: CheckedContinuation<Void, Never>) {
        guard let context, context.channel.isActive, !context.channel.isWritable else {
            continuation.resume()
            return
        }
        writabilityWaiter = continuation
    }

    /// The connection's task was cancelled: close at once.
    func cancel() {
        finish(closing: .all)
        resumeWriter()
    }

    /// 503 with `Retry-After`, then close: past the body budget, or past `max_connections`.
    private func busy(errors: any ErrorRenderer) {
        guard let context else { return }
        let busy = errors.render(ServerError.busy)
        finish(closing: nil)
        write(busy, version: version, keepAlive: false, context: context, thenClose: .all)
    }

    /// Writes `response`; with `thenClose`, closes the connection that way once it is written.
    private func write(
        _ response: consuming ServerResponse, version: HTTPVersion, keepAlive: Bool, context: ChannelHandlerContext,
        thenClose mode: CloseMode?
    ) {
        // Before the end is written: writing it may hand a pipelined request on at once.
        deadline.responseComplete()
        var written: EventLoopPromise<Void>?
        if let mode {
            let channel = context.channel
            written = context.eventLoop.makePromise(of: Void.self)
            written?.futureResult.whenComplete { _ in channel.close(mode: mode, promise: nil) }
        }
        ResponseWriter.write(
            consume response, version: version, keepAlive: keepAlive, context: context, promise: written, wrap: wrapOutboundOut)
    }

    /// Hands out no more requests; with `closing`, closes the connection that way now.
    private func finish(closing mode: CloseMode?) {
        if let mode, let context { context.close(mode: mode, promise: nil) }
        guard !finished else { return }
        finished = true
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: nil)
        }
    }

    /// The connection is gone: wake its task, and give back the budget held by a request still being
    /// read (a request being handled gives its share back when it is answered).
    private func end() {
        timer.cancel()
        finish(closing: nil)
        if !machine.isResponding {
            bodyBudget?.release(held)
            held = 0
        }
        resumeWriter()
    }

    private func resumeWriter() {
        if let writabilityWaiter {
            self.writabilityWaiter = nil
            writabilityWaiter.resume()
        }
    }
}
