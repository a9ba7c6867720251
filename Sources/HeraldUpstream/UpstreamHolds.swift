package import FoundationEssentials
package import HeraldCore
package import Logging
package import Metrics
import Synchronization

/// Pushback honoured for a whole upstream origin (docs/operations.md, "Pushback"): a 429, or a 503
/// with `Retry-After`, from an FCM project, a Huawei app, a Web Push or UnifiedPush origin holds
/// every request of this instance to that origin for the time it asked (at most `pushback_max`;
/// a 429 without `Retry-After` holds for a backoff that doubles with each such answer in a row).
/// While held, a call to the origin fails at once as temporary and nothing is sent. One per
/// gateway, shared by every front end and kept across reloads.
package final class UpstreamHolds: Sendable {
    /// One origin's hold.
    struct Hold: Sendable {
        var until: HeraldInstant
        var untilDate: Date
        /// Pushback answers in a row without `Retry-After`: the exponent of the next backoff.
        var streak: Int
        var pushkin: String
        var originClass: String
    }

    /// A hold as `/health` names it: never the origin's host.
    package struct Named: Sendable, Equatable {
        package var pushkin: String
        package var originClass: String
        package var until: Date
    }

    private let holds = Mutex<[String: Hold]>([:])
    /// How many origins have an entry: a call to an origin never held reads no lock.
    private let entries = Atomic(0)
    let clock: any HeraldClock
    let logger: Logger
    let metrics: any MetricsFactory
    private let counters = Mutex<[String: FloatingPointCounter]>([:])

    package init(clock: any HeraldClock, metrics: any MetricsFactory, logger: Logger) {
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// Whether no origin has a hold (or a backoff streak): a call then needs no origin at all.
    package var isEmpty: Bool { entries.load(ordering: .relaxed) == 0 }

    /// The time left of `origin`'s hold; nil when it is not held.
    package func remaining(_ origin: String) -> Duration? {
        guard entries.load(ordering: .relaxed) > 0 else { return nil }
        let now = clock.now
        return holds.withLock { table in
            guard let hold = table[origin], hold.until > now else { return nil }
            return hold.until - now
        }
    }

    /// The origin answered a request with pushback: holds it for `retryAfter` (at most `maximum`),
    /// or without one for `initial` doubled per pushback in a row. Returns the hold's length.
    @discardableResult
    package func pushedBack(
        _ origin: String, pushkin: String, originClass: String, retryAfter: Duration?, initial: Duration, maximum: Duration
    ) -> Duration {
        let now = clock.now
        let date = clock.date
        let (length, extended, started) = holds.withLock { table -> (Duration, Duration, Bool) in
            let previous = table[origin]
            let streak = retryAfter == nil ? (previous?.streak ?? 0) + 1 : 0
            let asked = retryAfter ?? initial * Int(1 << min(streak - 1, 20))
            let length = min(asked, maximum)
            let until = now + length
            // Another call's answer may have set a longer hold already: keep the later end.
            let end = max(until, previous.map { $0.until } ?? until)
            let added = previous.map { $0.until > now ? end - $0.until : end - now } ?? (end - now)
            if previous == nil { entries.add(1, ordering: .relaxed) }
            table[origin] = Hold(
                until: end, untilDate: date.addingTimeInterval((end - now).seconds), streak: streak, pushkin: pushkin,
                originClass: originClass)
            return (length, added, previous.map { $0.until <= now } ?? true)
        }
        if extended > .zero { counter(pushkin: pushkin, originClass: originClass).increment(by: extended.seconds) }
        if started {
            logger.warning(
                "The upstream asked for a pause: nothing is sent to it until the hold ends",
                metadata: [
                    "pushkin": "\(pushkin)", "origin": "\(origin)", "origin_class": "\(originClass)",
                    "hold_seconds": "\(String(format: "%.1f", length.seconds))",
                    "retry_after": "\(retryAfter.map { String(format: "%.1f", $0.seconds) } ?? "none")",
                ])
        }
        return length
    }

    /// The origin answered without pushback: its next pushback starts the backoff anew.
    package func answered(_ origin: String) {
        guard entries.load(ordering: .relaxed) > 0 else { return }
        let now = clock.now
        holds.withLock { table in
            guard let hold = table[origin], hold.until <= now else { return }
            table.removeValue(forKey: origin)
            entries.subtract(1, ordering: .relaxed)
        }
    }

    /// The holds in force now, for `/health`.
    package var current: [Named] {
        guard entries.load(ordering: .relaxed) > 0 else { return [] }
        let now = clock.now
        return holds.withLock { table in
            table.values.filter { $0.until > now }.map { Named(pushkin: $0.pushkin, originClass: $0.originClass, until: $0.untilDate) }
        }.sorted { ($0.pushkin, $0.originClass) < ($1.pushkin, $1.originClass) }
    }

    /// `herald_upstream_pushback_seconds_total{pushkin,origin_class}`.
    private func counter(pushkin: String, originClass: String) -> FloatingPointCounter {
        counters.withLock { table in
            let key = pushkin + "\u{0}" + originClass
            if let counter = table[key] { return counter }
            let counter = FloatingPointCounter(
                label: MetricName.upstreamPushbackSeconds, dimensions: [("pushkin", pushkin), ("origin_class", originClass)],
                factory: metrics)
            table[key] = counter
            return counter
        }
    }
}

/// Which holds a call's upstream answers to (`UpstreamCall.pushback`).
package struct PushbackScope: Sendable {
    package enum Origin: Sendable {
        /// One origin for every request: an FCM project, a Huawei app.
        case fixed(String)
        /// The request URL's origin (scheme, host, port): a Web Push or UnifiedPush server.
        case requestURL
    }

    package var holds: UpstreamHolds
    package var origin: Origin
    package var pushkin: String
    /// The metric's `origin_class`: the provider, or for a push service its kind (never its host).
    package var originClass: @Sendable (_ origin: String) -> String

    package init(
        holds: UpstreamHolds, origin: Origin, pushkin: String, originClass: @escaping @Sendable (_ origin: String) -> String
    ) {
        self.holds = holds
        self.origin = origin
        self.pushkin = pushkin
        self.originClass = originClass
    }

    /// The origin of `request` under this scope.
    func origin(of request: UpstreamRequest) -> String {
        switch origin {
        case .fixed(let name): return name
        case .requestURL: return Self.origin(ofURL: request.url)
        }
    }

    /// `scheme://host[:port]` of a URL: its first three slashes' worth.
    package static func origin(ofURL url: String) -> String {
        guard let authority = UpstreamOrigin.authorityStart(of: url) else { return url }
        let rest = url[authority...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        return url[..<authority].lowercased() + rest[..<end].lowercased()
    }
}
