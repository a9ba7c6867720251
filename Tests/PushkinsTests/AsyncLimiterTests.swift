import HeraldTestSupport
import Synchronization
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

@Suite struct AsyncLimiterTests {
    @Test func neverMoreThanTheLimitAtOnce() async {
        let limiter = AsyncLimiter(limit: 3)
        let peak = AtomicCounter()
        let now = AtomicCounter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try? await limiter.withPermit {
                        let current = now.add(1)
                        while true {
                            let seen = peak.current
                            if current <= seen || peak.increment(ifBelow: current) { break }
                        }
                        await Task.yield()
                        now.add(-1)
                    }
                }
            }
        }
        #expect(peak.current <= 3)
        #expect(limiter.inUse == 0)
    }

    /// Thousands of waiters (a notify with 100 devices from each of 64 connections queues 6 400 on
    /// an APNs pool) are granted in the order they queued, and a cancelled one in the middle is
    /// skipped without disturbing the others.
    @Test func waitersAreGrantedInOrderAndACancelledOneIsSkipped() async throws {
        let limiter = AsyncLimiter(limit: 1)
        try await limiter.acquire()
        let order = Granted()
        let count = 1000
        let cancelled = 500
        var tasks: [Task<Void, any Error>] = []
        for n in 0..<count {
            tasks.append(
                Task {
                    try await limiter.acquire()
                    order.append(n)
                    limiter.release()
                })
            // Queued one at a time, so that their order in the queue is known.
            try await Self.until { limiter.waiting == n + 1 }
        }
        tasks[cancelled].cancel()
        try await Self.until { limiter.waiting == count - 1 }
        limiter.release()
        for (n, task) in tasks.enumerated() {
            if n == cancelled {
                await #expect(throws: CancellationError.self) { try await task.value }
            } else {
                try await task.value
            }
        }
        #expect(order.all == Array(0..<count).filter { $0 != cancelled })
        #expect(limiter.inUse == 0)
        #expect(limiter.waiting == 0)
    }

    /// The order in which waiters were granted.
    final class Granted: Sendable {
        private let order = Mutex<[Int]>([])
        func append(_ n: Int) { order.withLock { $0.append(n) } }
        var all: [Int] { order.withLock { $0 } }
    }

    /// Waits until `condition` holds (yielding first, then sleeping; at most about 10 s).
    static func until(_ condition: () -> Bool) async throws {
        #expect(await eventually { condition() })
    }
}
