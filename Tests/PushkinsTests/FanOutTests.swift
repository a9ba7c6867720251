import HeraldTestSupport
import Synchronization
import Testing

@testable import HeraldCore

/// `fanOut`, the one bounded fan-out every front end's deliveries go through.
@Suite struct FanOutTests {
    /// Items wait here until the test lets a number of them go.
    final class Turnstile: Sendable {
        private struct State {
            var tickets = 0
            var waiting: [CheckedContinuation<Void, Never>] = []
        }
        private let state = Mutex(State())
        let started = AtomicCounter()
        let running = AtomicCounter()
        let peak = AtomicCounter()

        func pass() async {
            started.add(1)
            let now = running.add(1)
            while now > peak.current, !peak.increment(ifBelow: now) {}
            await withCheckedContinuation { continuation in
                let go = state.withLock { s -> Bool in
                    if s.tickets > 0 {
                        s.tickets -= 1
                        return true
                    }
                    s.waiting.append(continuation)
                    return false
                }
                if go { continuation.resume() }
            }
            running.add(-1)
        }

        func open(_ count: Int) {
            let released = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                s.tickets += count
                let n = min(s.tickets, s.waiting.count)
                s.tickets -= n
                let out = Array(s.waiting.prefix(n))
                s.waiting.removeFirst(n)
                return out
            }
            for continuation in released { continuation.resume() }
        }
    }

    @Test func atMostLimitRunAndTheNextStartsAsOneEnds() async throws {
        let gate = Turnstile()
        async let results = fanOut(Array(0..<10), limit: 3, notStarted: -1) { item in
            await gate.pass()
            return item * 2
        }
        #expect(await eventually { gate.started.current == 3 })
        gate.open(1)
        #expect(await eventually { gate.started.current == 4 })
        #expect(gate.running.current == 3)
        gate.open(100)
        #expect(await results == (0..<10).map { $0 * 2 })
        #expect(gate.peak.current == 3)
    }

    @Test func withoutALimitEveryItemStartsAtOnceAndResultsKeepItemOrder() async throws {
        let gate = Turnstile()
        async let results = fanOut(["a", "b", "c", "d"], notStarted: "") { item in
            await gate.pass()
            return item.uppercased()
        }
        #expect(await eventually { gate.started.current == 4 })
        gate.open(4)
        #expect(await results == ["A", "B", "C", "D"])
    }

    @Test func anAdmissionLimiterIsSharedBetweenFanOuts() async throws {
        let gate = Turnstile()
        let admission = AsyncLimiter(limit: 2)
        async let first = fanOut([1, 2, 3], admission: admission, notStarted: 0) { item in
            await gate.pass()
            return item
        }
        async let second = fanOut([4, 5, 6], admission: admission, notStarted: 0) { item in
            await gate.pass()
            return item
        }
        #expect(await eventually { gate.started.current == 2 })
        #expect(await eventually { admission.waiting > 0 })
        gate.open(100)
        #expect(await first == [1, 2, 3])
        #expect(await second == [4, 5, 6])
        #expect(gate.peak.current == 2)
        #expect(admission.inUse == 0)
    }

    @Test func itemsNotStartedBeforeCancellationGetTheirPlaceholder() async throws {
        let gate = Turnstile()
        let task = Task {
            await fanOut(Array(0..<5), limit: 1, notStarted: -1) { item in
                await gate.pass()
                return item
            }
        }
        #expect(await eventually { gate.started.current == 1 })
        task.cancel()
        gate.open(100)
        let results = await task.value
        #expect(results[0] == 0)
        #expect(results.dropFirst().allSatisfy { $0 == -1 })
    }

    /// The last item runs in the caller's own task, beside the others' child tasks, with and
    /// without an admission limiter: the results are the same, and one task fewer is made.
    @Test func theLastItemRunsInTheCallersTask() async throws {
        let caller = withUnsafeCurrentTask { $0?.hashValue }
        for admission in [nil, AsyncLimiter(limit: 8)] {
            let inCaller = await fanOut(Array(0..<4), admission: admission, notStarted: nil) { _ -> Bool? in
                withUnsafeCurrentTask { $0?.hashValue } == caller
            }
            #expect(inCaller == [false, false, false, true])
            #expect(admission?.inUse ?? 0 == 0)
        }
        #expect(await fanOut([Int](), notStarted: 0) { $0 }.isEmpty)
    }
}
