import HeraldCore

/// The relay's rate per device token: `perMinute` messages a minute on average, bursts of up to
/// `burst` (`TokenBuckets`).
final class TokenRateLimiter: Sendable {
    let perMinute: Int
    let burst: Int
    /// What the buckets refill on (docs/architecture.md, "Time").
    let clock: any HeraldClock
    private let buckets: TokenBuckets<String>

    init(perMinute: Int, burst: Int, maxTracked: Int = 100_000, clock: any HeraldClock) {
        self.clock = clock
        self.perMinute = perMinute
        self.burst = max(1, burst)
        self.buckets = TokenBuckets(maxTracked: maxTracked)
    }

    /// Takes one message's worth for `key`; false when the bucket is empty.
    func allow(_ key: String) -> Bool { allow(key, now: clock.now) }

    /// Takes one message's worth for `key` at `now`.
    func allow(_ key: String, now: HeraldInstant) -> Bool {
        buckets.take(key, now: now, perSecond: Double(perMinute) / 60, burst: burst) == nil
    }
}
