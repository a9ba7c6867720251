import HeraldCore
import NIOCore
import NIOPosix

/// The work after answers that waits on something outside (`ServerResponse.afterAnswerWaits`), for
/// every connection of a server: one queue per event loop, each piece run in a child task on its
/// connection's loop. A connection hands a piece over and keeps them in order itself (its next
/// request's answer waits for the previous piece: `HTTPServer.serve(_:behind:)`).
///
/// The pieces are the server's children, not the connection's: a connection's task then owns no
/// task group and no second task while it is idle, and its requests bind `RequestContext` outside
/// any group's body, where the runtime would copy it into each child of a notify's fan-out (what
/// each form cost: docs/operations.md, "The work after answers on the server's queues (stop 76)").
struct AfterAnswerQueues: Sendable {
    typealias Work = @Sendable () async -> Void

    private struct Queue: Sendable {
        let executor: EventLoopTaskExecutor
        let pieces: AsyncStream<Work>
        let continuation: AsyncStream<Work>.Continuation
    }

    private let queues: [Queue]

    init(loops: MultiThreadedEventLoopGroup) {
        var queues: [Queue] = []
        for loop in loops.makeIterator() {
            let (pieces, continuation) = AsyncStream.makeStream(of: Work.self)
            queues.append(Queue(executor: EventLoopTaskExecutor(loop), pieces: pieces, continuation: continuation))
        }
        self.queues = queues
    }

    /// The queue of `loop`'s connections.
    func queue(for loop: any EventLoop) -> AsyncStream<Work>.Continuation? {
        (queues.first { $0.executor.eventLoop === loop } ?? queues.first)?.continuation
    }

    /// Runs the pieces handed over until `finish()`, and returns when the last one is done.
    func run() async {
        await withDiscardingTaskGroup { group in
            for queue in queues {
                group.addTask(executorPreference: queue.executor) {
                    await withDiscardingTaskGroup { pieces in
                        for await work in queue.pieces {
                            pieces.addTask(executorPreference: queue.executor) { await work() }
                        }
                    }
                }
            }
        }
    }

    /// No more pieces come: `run()` returns once those handed over are done.
    func finish() {
        for queue in queues { queue.continuation.finish() }
    }
}
