import HeraldCore
import Logging
import Synchronization

/// The sources told to back off, logged at most once a minute while it goes on: the top five by
/// refusals, with the reasons (addresses go in a log line, never in a metric label;
/// docs/operations.md, "Sources").
final class SourceLimitLog: Sendable {
    private struct State {
        var since: HeraldInstant?
        var refusals: [RequestSource: (share: Int, rate: Int, device: Int)] = [:]
    }
    private let state = Mutex(State())
    private let interval: Duration
    /// At most this many sources are counted in a minute; past that, only the ones already counted.
    private let maxTracked = 10_000

    init(interval: Duration = .seconds(60)) { self.interval = interval }

    enum Reason { case share, rate, device }

    /// Counts a refusal; when a minute has passed since the first of the window, returns the line
    /// to log and starts a new window.
    func refused(_ source: RequestSource?, _ reason: Reason, now: HeraldInstant) -> (String, Logger.Metadata)? {
        guard let source else { return nil }
        return state.withLock { s -> (String, Logger.Metadata)? in
            if s.since == nil { s.since = now }
            if s.refusals[source] != nil || s.refusals.count < maxTracked {
                var counts = s.refusals[source] ?? (0, 0, 0)
                switch reason {
                case .share: counts.share += 1
                case .rate: counts.rate += 1
                case .device: counts.device += 1
                }
                s.refusals[source] = counts
            }
            guard let since = s.since, now - since >= interval else { return nil }
            let top = s.refusals.sorted {
                ($0.value.share + $0.value.rate + $0.value.device) > ($1.value.share + $1.value.rate + $1.value.device)
            }
            .prefix(5)
            let listed = top.map { "\($0.key) (share \($0.value.share), rate \($0.value.rate), device \($0.value.device))" }
            let line: (String, Logger.Metadata) = (
                "Sources told to back off in the last minute",
                ["sources": "\(s.refusals.count)", "top": "\(listed.joined(separator: "; "))"]
            )
            s = State()
            return line
        }
    }
}
