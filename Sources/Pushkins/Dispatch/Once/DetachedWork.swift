import HeraldCore
import NIOPosix
import Synchronization

/// Work that may outlive the request that started it: a device's upstream call whose answer the
/// sender stopped waiting for (`notify.answer_within`, a closed connection). The work runs in
/// this runner's task group, which the gateway runs as a service of its group (started before the
/// listeners, stopped after them: what is under way at shutdown finishes), never in a stray task.
/// Before `run()` starts, or after it ended, work runs in the caller's task instead.
package final class DetachedWork: Sendable {
    /// The work, and the event loop it prefers (the submitting request's: its connections and
    /// the request's own thread, docs/architecture.md, "One thread per request").
    private struct Job: Sendable {
        let run: @Sendable () async -> Void
        let executor: EventLoopTaskExecutor?
    }
    private let jobs: AsyncStream<Job>
    private let submitter: AsyncStream<Job>.Continuation
    private let running = Atomic(false)
    /// What the deadlines are measured on (docs/architecture.md, "Time").
    let clock: any HeraldClock

    package init(clock: any HeraldClock) {
        self.clock = clock
        (jobs, submitter) = AsyncStream.makeStream(of: Job.self)
    }

    /// Runs submitted work until `finish()`, then waits for what is under way.
    package func run() async {
        running.store(true, ordering: .releasing)
        await withDiscardingTaskGroup { group in
            for await job in jobs { group.addTask(executorPreference: job.executor) { await job.run() } }
        }
        running.store(false, ordering: .releasing)
    }

    /// No more work is taken; `run()` returns once what is under way has finished.
    package func finish() { submitter.finish() }

    /// `work`'s value, or nil when it has not finished after `deadline`; it then goes on in the
    /// runner (cancelling the caller does not cancel it).
    package func value<Value: Sendable>(within deadline: Duration, _ work: @escaping @Sendable () async -> Value) async -> Value? {
        let gate = ReadinessGate<Value>()
        let executor = MultiThreadedEventLoopGroup.currentEventLoop.map(EventLoopTaskExecutor.init)
        guard running.load(ordering: .acquiring),
            case .enqueued = submitter.yield(Job(run: { gate.open(await work()) }, executor: executor))
        else {
            return await work()
        }
        return await withTaskGroup(of: Value?.self) { group in
            group.addTask { try? await gate.wait() }
            group.addTask {
                try? await self.clock.wait(deadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? gate.value
        }
    }
}
