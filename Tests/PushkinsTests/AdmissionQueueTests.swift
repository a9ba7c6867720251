import Testing

@testable import HeraldCore

/// The queue every upstream request waits in, as a value: served by source in turn, in arrival
/// order within a source, a cancelled waiter taken out, and waiters past their deadline taken out
/// for their owner to fail, without a task or a clock.
@Suite struct AdmissionQueueTests {
    static let start = ContinuousClock.Instant.now
    static func at(_ seconds: Int) -> HeraldInstant { start.advanced(by: .seconds(seconds)) }

    static let flood = RequestSource(ipv4: 0xC000_0201)
    static let quiet = RequestSource(ipv4: 0xC000_0202)

    @Test func oneSourceIsServedInArrivalOrder() {
        var queue = AdmissionQueue<String>()
        for n in 0..<5 { queue.append("r\(n)", id: n, turn: Self.flood) }
        #expect(queue.count == 5)
        #expect((0..<5).map { _ in queue.next() } == ["r0", "r1", "r2", "r3", "r4"])
        #expect(queue.next() == nil)
        #expect(queue.isEmpty)
    }

    /// A flood's thousand waiters delay a quiet source's one by one slot, not a thousand.
    @Test func sourcesAreServedInTurn() {
        var queue = AdmissionQueue<String>()
        for n in 0..<1000 { queue.append("flood \(n)", id: n, turn: Self.flood) }
        queue.append("quiet", id: 1000, turn: Self.quiet)
        queue.append("nobody", id: 1001, turn: nil)
        #expect(queue.next() == "flood 0")
        #expect(queue.next() == "quiet")
        #expect(queue.next() == "nobody")
        #expect(queue.next() == "flood 1")
        #expect(queue.next() == "flood 2")
        #expect(queue.count == 997)
    }

    @Test func aRemovedWaiterIsNotServedAndItsSourceLeavesTheTurnsWhenEmpty() {
        var queue = AdmissionQueue<String>()
        queue.append("a", id: 1, turn: Self.flood)
        queue.append("b", id: 2, turn: Self.flood)
        queue.append("q", id: 3, turn: Self.quiet)
        #expect(queue.remove(2, turn: Self.flood) == "b")
        #expect(queue.remove(2, turn: Self.flood) == nil)
        #expect(queue.remove(3, turn: Self.flood) == nil)  // not that source's
        #expect(queue.remove(3, turn: Self.quiet) == "q")
        #expect(queue.next() == "a")
        #expect(queue.next() == nil)
        #expect(queue.isEmpty)
    }

    /// A deadline while queued: nothing expires before it, every waiter past it of every source is
    /// taken out at once, and the later ones stay in their turns.
    @Test func waitersPastTheirDeadlineAreTakenOut() {
        var queue = AdmissionQueue<String>()
        queue.append("f0", id: 0, turn: Self.flood, deadline: Self.at(10))
        queue.append("f1", id: 1, turn: Self.flood, deadline: Self.at(11))
        queue.append("f2", id: 2, turn: Self.flood, deadline: Self.at(20))
        queue.append("q0", id: 3, turn: Self.quiet, deadline: Self.at(10))
        queue.append("patient", id: 4, turn: nil)
        #expect(queue.expire(now: Self.at(9)).isEmpty)
        #expect(queue.count == 5)
        #expect(Set(queue.expire(now: Self.at(11))) == ["f0", "f1", "q0"])
        #expect(queue.count == 2)
        #expect(queue.expire(now: Self.at(19)).isEmpty)
        #expect(queue.next() == "f2")
        #expect(queue.next() == "patient")
        #expect(queue.expire(now: Self.at(100)).isEmpty)
        #expect(queue.isEmpty)
    }

    /// A waiter served or removed before its deadline is never reported as expired.
    @Test func aServedWaiterDoesNotExpire() {
        var queue = AdmissionQueue<String>()
        queue.append("a", id: 0, turn: Self.flood, deadline: Self.at(1))
        queue.append("b", id: 1, turn: Self.quiet, deadline: Self.at(1))
        #expect(queue.next() == "a")
        #expect(queue.remove(1, turn: Self.quiet) == "b")
        #expect(queue.expire(now: Self.at(5)).isEmpty)
        queue.append("c", id: 2, turn: Self.flood, deadline: Self.at(6))
        #expect(queue.expire(now: Self.at(6)) == ["c"])
    }
}
