import HeraldCore
import NIOCore
import NIOPosix
import Synchronization

/// Work that may outlive the request that started it: a device's upstream call whose answer the
/// sender stopped waiting for (`notify.answer_within`, a closed connection). The work runs in
/// this runner's task group, which the gateway runs as a service of its group (started before the
/// listeners, stopped after them: what is under way at shutdown finishes), never in a stray task.
/// Before `run()` starts, or after it ended, work runs in the caller's task instead.
package final class DetachedWork: Sendable {
    /// A piece of work, run on the lane of the submitting request's event loop (its connections
    /// and the request's own thread, docs/architecture.md, "One thread per request").
    private struct Job: Sendable {
        let run: @Sendable () async -> Void
    }

    /// One runner per event loop, each a task preferring its loop: a job submitted from a loop
    /// starts on that loop's thread, with no hop to another thread and back.
    private struct Lane: Sendable {
        let loop: any EventLoop
        let jobs: AsyncStream<Job>
        let submitter: AsyncStream<Job>.Continuation
    }

    private let lanes: [Lane]
    private let byLoop: [ObjectIdentifier: Int]
    private let running = Atomic(false)
    /// What the deadlines are measured on (docs/architecture.md, "Time").
    let clock: any HeraldClock

    package init(clock: any HeraldClock, group: MultiThreadedEventLoopGroup = .singleton) {
        self.clock = clock
        var lanes: [Lane] = []
        var byLoop: [ObjectIdentifier: Int] = [:]
        for loop in group.makeIterator() {
            let (jobs, submitter) = AsyncStream.makeStream(of: Job.self)
            byLoop[ObjectIdentifier(loop)] = lanes.count
            lanes.append(Lane(loop: loop, jobs: jobs, submitter: submitter))
        }
        self.lanes = lanes
        self.byLoop = byLoop
    }

    /// Runs submitted work until `finish()`, then waits for what is under way.
    package func run() async {
        running.store(true, ordering: .releasing)
        await withDiscardingTaskGroup { group in
            for lane in lanes {
                group.addTask(executorPreference: EventLoopTaskExecutor(lane.loop)) {
                    await withDiscardingTaskGroup { jobs in
                        for await job in lane.jobs { jobs.addTask { await job.run() } }
                    }
                }
            }
        }
        running.store(false, ordering: .releasing)
    }

    /// No more work is taken; `run()` returns once what is under way has finished.
    package func finish() {
        for lane in lanes { lane.submitter.finish() }
    }

    /// `work`'s value, or nil when it has not finished after `deadline`; it then goes on in the
    /// runner (cancelling the caller does not cancel it). A deadline of zero or less waits for
    /// `work` in the caller's own task, as without a runner (`notify.answer_within: 0`).
    package func value<Value: Sendable>(within deadline: Duration, _ work: @escaping @Sendable () async -> Value) async -> Value? {
        guard deadline > .zero else { return await work() }
        let loop = MultiThreadedEventLoopGroup.currentEventLoop
        let answer = ReadinessGate<Value?>()
        let lane = loop.flatMap { byLoop[ObjectIdentifier($0)] }.map { lanes[$0] } ?? lanes.first
        guard running.load(ordering: .acquiring), let lane, case .enqueued = lane.submitter.yield(Job(run: { answer.open(await work()) }))
        else {
            return await work()
        }
        // The deadline: on the system clock, a timer of the request's event loop (no task, no
        // thread of its own); on another clock (a test's manual clock), a wait on that clock.
        if clock is SystemClock, let loop {
            let timer = loop.scheduleTask(in: .nanoseconds(Int64(deadline.seconds * 1e9))) { answer.open(nil) }
            let value = (try? await answer.wait()) ?? nil
            timer.cancel()
            return value
        }
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await self.clock.wait(deadline)
                answer.open(nil)
            }
            let value = (try? await answer.wait()) ?? nil
            group.cancelAll()
            return value
        }
    }
}
