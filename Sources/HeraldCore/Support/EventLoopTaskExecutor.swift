package import NIOCore

/// A task executor that runs its jobs on one SwiftNIO event loop. The HTTP server's connection
/// tasks prefer the loop their socket lives on (docs/architecture.md, "One thread per request"):
/// reading a request, handling it and writing the answer then happen on that thread, without the
/// wake-ups of handing each step between the loop and Swift's cooperative pool, and the upstream
/// transports pick connections on that same loop when they can.
package final class EventLoopTaskExecutor: TaskExecutor {
    package let eventLoop: any EventLoop

    package init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
