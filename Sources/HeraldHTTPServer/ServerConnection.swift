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
    /// task is cancelled (which closes it).
    func nextRequest() async -> ReadRequest? {
        let handler = self.handler
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                onLoop { handler.value.nextRequest(continuation) }
            }
        } onCancel: {
            onLoop { handler.value.cancel() }
        }
    }

    /// Writes the answer to `head`'s request, unless the server answered it at its deadline.
    func respond(_ response: ServerResponse, to head: HTTPRequestHead) async -> Responded {
        let handler = self.handler
        if channel.eventLoop.inEventLoop { return handler.value.respond(response, to: head) }
        return (try? await channel.eventLoop.submit { handler.value.respond(response, to: head) }.get()) ?? .closing
    }

    /// Cancels the answer deadline of the request last handed out; whether the handler's answer
    /// will be written on an open connection (`ServerResponse.onHeard`).
    func claimAnswer() async -> Bool {
        let handler = self.handler
        if channel.eventLoop.inEventLoop { return handler.value.claimAnswer() }
        return (try? await channel.eventLoop.submit { handler.value.claimAnswer() }.get()) ?? false
    }

    /// Starts `deadline` for `head`'s request (`AnswerDeadline`).
    func answer(by deadline: AnswerDeadline, to head: HTTPRequestHead, requestId: String) {
        let handler = self.handler
        onLoop { handler.value.answer(by: deadline, to: head, requestId: requestId) }
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
