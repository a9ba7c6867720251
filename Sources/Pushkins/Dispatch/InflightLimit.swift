import HeraldCore

/// `inflight_request_limit`: concurrent device dispatches allowed per app.
package final class InflightLimit: Sendable {
    package let limit: Int
    private let count = AtomicCounter()

    package init(limit: Int) { self.limit = limit }

    package func acquire() -> Bool { count.increment(ifBelow: limit) }

    /// Takes as many of `wanted` slots as are free (0 when none is).
    package func acquire(upTo wanted: Int) -> Int {
        var granted = 0
        while granted < wanted, count.increment(ifBelow: limit) { granted += 1 }
        return granted
    }
    package func release(count n: Int) { count.add(-n) }
}
