import Synchronization

/// A shared integer counter (in-flight requests, active connections).
package final class AtomicCounter: Sendable {
    private let value = Atomic<Int>(0)

    package init() {}

    /// Adds `delta` and returns the new value.
    @discardableResult
    package func add(_ delta: Int) -> Int {
        value.add(delta, ordering: .relaxed).newValue
    }

    /// Adds one unless that would pass `limit`; returns whether it did.
    package func increment(ifBelow limit: Int) -> Bool {
        var current = value.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = value.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    package var current: Int { value.load(ordering: .relaxed) }
}
