import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import HeraldCore

/// `EventLoopTaskExecutor`: a task that prefers it runs on its event loop, after every suspension,
/// however many tasks hand it jobs at once.
@Suite struct EventLoopTaskExecutorTests {
    final class Counts: Sendable {
        let steps = Atomic(0)
        let offLoop = Atomic(0)
    }

    @Test func everyStepOfEveryTaskRunsOnTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let loop = loops[0]
        let executor = EventLoopTaskExecutor(loop)
        let counts = Counts()
        await withTaskGroup(of: Void.self) { tasks in
            for _ in 0..<50 {
                tasks.addTask(executorPreference: executor) {
                    for _ in 0..<20 {
                        if !loop.inEventLoop { counts.offLoop.add(1, ordering: .relaxed) }
                        counts.steps.add(1, ordering: .relaxed)
                        await Task.yield()
                    }
                }
            }
        }
        #expect(counts.steps.load(ordering: .relaxed) == 1_000)
        #expect(counts.offLoop.load(ordering: .relaxed) == 0)
        // A task resumed from another thread (a continuation resumed off the loop) comes back to it.
        let resumedOnLoop = await withTaskExecutorPreference(executor) {
            await withCheckedContinuation { continuation in
                loops[1].execute { continuation.resume() }
            }
            return loop.inEventLoop
        }
        #expect(resumedOnLoop)
        try await group.shutdownGracefully()
    }
}
