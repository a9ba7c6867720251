import Pushkins

/// `inflight_request_limit`: concurrent device dispatches allowed per app.
final class InflightLimit: Sendable {
    let limit: Int
    private let count = AtomicCounter()

    init(limit: Int) { self.limit = limit }

    func acquire() -> Bool { count.increment(ifBelow: limit) }
    func release(count n: Int) { count.add(-n) }
}
