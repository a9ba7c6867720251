package import NIOCore
import Synchronization

/// A task executor that runs its jobs on one SwiftNIO event loop. The HTTP server's connection
/// tasks prefer the loop their socket lives on (docs/architecture.md, "One thread per request"):
/// reading a request, handling it and writing the answer then happen on that thread, without the
/// wake-ups of handing each step between the loop and Swift's cooperative pool, and the upstream
/// transports pick connections on that same loop when they can.
///
/// A job waits in the executor's own queue, and the loop is handed a closure that holds only the
/// executor, which runs the oldest job: a closure that held the job too would be a heap allocation
/// for every hop onto the loop (two or more a request).
package final class EventLoopTaskExecutor: TaskExecutor {
    package let eventLoop: any EventLoop
    /// Jobs handed over and not yet run, oldest first; one closure on the loop for each.
    private let jobs = Mutex(CircularBuffer<UnownedJob>(initialCapacity: 4))

    package init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        eventLoop.execute { self.runOldest() }
    }

    private func runOldest() {
        guard let job = jobs.withLock({ $0.popFirst() }) else { return }
        job.runSynchronously(on: asUnownedTaskExecutor())
    }
}
