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

    /// Waiters are served by source in turn: a flood's queued requests do not stand in front of
    /// another source's; one source's waiters keep their order, and a cancelled waiter of a source
    /// with no other waiter takes its turn with it.
    @Test func waitersAreServedBySourceInTurn() async throws {
        let limiter = AsyncLimiter(limit: 1)
        try await limiter.acquire()
        let order = Granted()
        let (flood, quiet, gone) = (RequestSource(ipv4: 0x7F00_0002), RequestSource(ipv4: 0x7F00_0003), RequestSource(ipv4: 9))
        // Queued one at a time: the flood's 0…4, then the quiet source's 10, a source that gives
        // up (20), and the quiet one's 11.
        let queue: [(Int, RequestSource?)] = [
            (0, flood), (1, flood), (2, flood), (3, flood), (4, flood), (10, quiet), (20, gone), (11, quiet),
        ]
        var tasks: [Task<Void, any Error>] = []
        for (position, (n, source)) in queue.enumerated() {
            tasks.append(
                Task {
                    try await limiter.acquire(turn: source)
                    order.append(n)
                    limiter.release()
                })
            try await Self.until { limiter.waiting == position + 1 }
        }
        tasks[6].cancel()
        try await Self.until { limiter.waiting == queue.count - 1 }
        limiter.release()
        for (position, task) in tasks.enumerated() where position != 6 { try await task.value }
        #expect(order.all == [0, 10, 1, 11, 2, 3, 4])
        #expect(limiter.inUse == 0 && limiter.waiting == 0)
    }

    /// A deadline while queued, on a manual clock: a waiter still queued `maxWait` after it
    /// arrived fails with `AdmissionTimeout` when the next slot frees, and the slot goes to the
    /// waiter behind it that has time left.
    @Test func aWaiterPastItsWaitFailsAndTheSlotGoesOn() async throws {
        let clock = ManualClock()
        let limiter = AsyncLimiter(limit: 1, maxWait: .seconds(10), clock: clock)
        try await limiter.acquire()
        let early = Task { try await limiter.acquire() }
        try await Self.until { limiter.waiting == 1 }
        clock.advance(by: .seconds(6))
        let late = Task {
            try await limiter.acquire()
            limiter.release()
        }
        try await Self.until { limiter.waiting == 2 }
        clock.advance(by: .seconds(5))  // the first has waited 11 s, the second 5 s
        limiter.release()
        await #expect(throws: AdmissionTimeout.self) { try await early.value }
        try await late.value
        #expect(limiter.inUse == 0 && limiter.waiting == 0)
    }

    /// The app's in-flight limit shared by sources: alone, a source may fill it; once another
    /// source is active, each has half, a source under its share is admitted though the app is
    /// full, and one over its share is refused as such.
    @Test func theInflightLimitIsSharedBetweenSources() {
        let limit = InflightLimit(limit: 4)
        let (flood, quiet) = (RequestSource(ipv4: 2), RequestSource(ipv4: 3))
        #expect(limit.acquire(upTo: 4, source: flood) == (4, nil))
        #expect(limit.acquire(upTo: 1, source: flood) == (0, .full))  // alone: full, not over a share
        #expect(limit.acquire(upTo: 3, source: quiet) == (2, nil))  // its share, past the limit
        #expect(limit.acquire(upTo: 1, source: quiet) == (0, .overShare))
        #expect(limit.acquire(upTo: 1, source: flood) == (0, .overShare))
        #expect(limit.inUse == 6)
        limit.release(count: 4, source: flood)
        #expect(limit.acquire(upTo: 1, source: flood) == (1, nil))  // room again
        #expect(limit.acquire(upTo: 1, source: nil) == (1, nil))
        limit.release(count: 2, source: quiet)
        limit.release(count: 1, source: flood)
        limit.release(count: 1, source: nil)
        #expect(limit.inUse == 0)
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
