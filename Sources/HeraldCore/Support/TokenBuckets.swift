import Synchronization

/// A token bucket per key: a rate of tokens a second on average, bursts of up to a bucket's size,
/// each call's own (a key's rate may differ from another's). At most `maxTracked` keys are
/// remembered; past that, the full buckets (idle keys) are forgotten first. The relay's device
/// tokens, notify sources and devices each keep one (docs/operations.md, "Sources").
package final class TokenBuckets<Key: Hashable & Sendable>: Sendable {
    package let maxTracked: Int
    private struct Bucket {
        var tokens: Double
        var updated: HeraldInstant
    }
    private let buckets = Mutex<[Key: Bucket]>([:])

    package init(maxTracked: Int = 100_000) { self.maxTracked = maxTracked }

    /// Takes one token of `key`'s bucket at `now`: nil when taken, else how long until one is
    /// there. A rate of 0 takes nothing and is never refused.
    package func take(_ key: Key, now: HeraldInstant, perSecond rate: Double, burst: Int) -> Duration? {
        guard rate > 0 else { return nil }
        let size = Double(max(1, burst))
        return buckets.withLock { table -> Duration? in
            var bucket = table[key] ?? Bucket(tokens: size, updated: now)
            bucket.tokens = min(size, bucket.tokens + (now - bucket.updated).seconds * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                table[key] = bucket
                return .seconds((1 - bucket.tokens) / rate)
            }
            bucket.tokens -= 1
            if table[key] == nil, table.count >= maxTracked {
                table = table.filter { $0.value.tokens + (now - $0.value.updated).seconds * rate < size }
                if table.count >= maxTracked { table.removeAll() }
            }
            table[key] = bucket
            return nil
        }
    }

    /// Keys remembered (for tests).
    package var count: Int { buckets.withLock { $0.count } }
}
