import HeraldCore
import Synchronization

/// A token bucket per device token: `perMinute` messages a minute on average, bursts of up to
/// `burst`. At most `maxTracked` device tokens are remembered; past that, the full buckets (idle
/// devices) are forgotten first.
final class TokenRateLimiter: Sendable {
    let perMinute: Int
    let burst: Int
    let maxTracked: Int
    /// What the buckets refill on (docs/architecture.md, "Time").
    let clock: any HeraldClock
    private let buckets = Mutex<[String: (tokens: Double, updated: HeraldInstant)]>([:])

    init(perMinute: Int, burst: Int, maxTracked: Int = 100_000, clock: any HeraldClock) {
        self.clock = clock
        self.perMinute = perMinute
        self.burst = max(1, burst)
        self.maxTracked = maxTracked
    }

    /// Takes one message's worth for `key`; false when the bucket is empty.
    func allow(_ key: String) -> Bool { allow(key, now: clock.now) }

    /// Takes one message's worth for `key` at `now`.
    func allow(_ key: String, now: HeraldInstant) -> Bool {
        guard perMinute > 0 else { return true }
        let rate = Double(perMinute) / 60
        return buckets.withLock { table in
            var bucket = table[key] ?? (Double(burst), now)
            bucket.tokens = min(Double(burst), bucket.tokens + (now - bucket.updated).seconds * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                table[key] = bucket
                return false
            }
            bucket.tokens -= 1
            if table[key] == nil, table.count >= maxTracked {
                table = table.filter { $0.value.tokens + (now - $0.value.updated).seconds * rate < Double(burst) }
                if table.count >= maxTracked { table.removeAll() }
            }
            table[key] = bucket
            return true
        }
    }
}
