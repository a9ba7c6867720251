import NIOCore
import NIOHTTP1

/// A connection as its task sees it: the requests its `ConnectionHandler` has read, one at a time,
/// and the answers to them. The task prefers the connection's event loop, so these calls run there
/// directly; from anywhere else they hop to the loop first.
struct ServerConnection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<ConnectionHandler>

    init(channel: any Channel, handler: ConnectionHandler) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// The next request, once it has been read whole; nil when the connection is closing, or the
    /// task is cancelled (which closes it). The continuation is unchecked (the check's object was
    /// one of a notify's allocations): the handler keeps one waiter and clears it as it resumes it,
    /// when a request is read or the connection ends. On the loop, no closure is made either.
    func nextRequest() async -> ReadRequest? {
        let handler = self.handler
        let loop = channel.eventLoop
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                if loop.inEventLoop {
                    handler.value.nextRequest(continuation)
                } else {
                    loop.execute { handler.value.nextRequest(continuation) }
                }
            }
        } onCancel: {
            onLoop { handler.value.cancel() }
        }
    }

    /// Writes the answer to `head`'s request, unless the server answered it at its deadline.
    func respond(_ response: consuming ServerResponse, to head: HTTPRequestHead) async -> Responded {
        let handler = self.handler
        if channel.eventLoop.inEventLoop { return handler.value.respond(consume response, to: head) }
        let response = copy response
        return (try? await channel.eventLoop.submit { handler.value.respond(response, to: head) }.get()) ?? .closing
    }

    /// Cancels the answer deadline of the request last handed out; whether the handler's answer
    /// will be written on an open connection (`ServerResponse.afterAnswer`).
    func claimAnswer() async -> Bool {
        let handler = self.handler
        if channel.eventLoop.inEventLoop { return handler.value.claimAnswer() }
        return (try? await channel.eventLoop.submit { handler.value.claimAnswer() }.get()) ?? false
    }

    /// Starts `deadline` for `head`'s request (`AnswerDeadline`).
    func answer(by deadline: AnswerDeadline, to head: HTTPRequestHead, requestId: String) {
        let handler = self.handler
        // On the loop, called directly: a closure for `onLoop` would be an allocation per request.
        if channel.eventLoop.inEventLoop { return handler.value.answer(by: deadline, to: head, requestId: requestId) }
        channel.eventLoop.execute { handler.value.answer(by: deadline, to: head, requestId: requestId) }
    }

    /// Returns when the connection can take more output, or has closed.
    func writable() async {
        guard !channel.isWritable else { return }
        let handler = self.handler
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                onLoop { handler.value.whenWritable(continuation) }
            }
        } onCancel: {
            onLoop { handler.value.cancel() }
        }
    }

    /// Over the listener's `max_connections`: the first request is answered 503, then the connection closes.
    func turnAway() {
        let handler = self.handler
        onLoop { handler.value.turnAway() }
    }

    /// Returns when the connection has closed.
    func closed() async {
        try? await channel.closeFuture.get()
    }

    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if channel.eventLoop.inEventLoop {
            body()
        } else {
            channel.eventLoop.execute(body)
        }
    }
}
