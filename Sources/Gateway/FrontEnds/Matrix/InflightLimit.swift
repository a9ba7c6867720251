import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import Pushkins

/// `inflight_request_limit`: concurrent device dispatches allowed per app.
final class InflightLimit: Sendable {
    let limit: Int
    private let count = AtomicCounter()

    init(limit: Int) { self.limit = limit }

    func acquire() -> Bool { count.increment(ifBelow: limit) }

    /// Takes as many of `wanted` slots as are free (0 when none is).
    func acquire(upTo wanted: Int) -> Int {
        var granted = 0
        while granted < wanted, count.increment(ifBelow: limit) { granted += 1 }
        return granted
    }
    func release(count n: Int) { count.add(-n) }
}
