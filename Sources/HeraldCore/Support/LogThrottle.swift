import Synchronization

/// Keeps repeated per-device log lines from flooding the logs (a gorush request of 70 000 dead
/// tokens, a push service down for every device): for each kind of line, at most `perInterval`
/// lines an `interval`; the next line after a window reports how many were left out. The counts
/// stay exact in the metrics.
package final class LogThrottle: Sendable {
    package let perInterval: Int
    package let interval: Duration
    private let windows = Mutex<[String: (start: HeraldInstant, count: Int, suppressed: Int)]>([:])

    /// The process-wide throttle for per-device lines: 20 of each kind a second. It is the one
    /// piece of the process on the system's clock whoever runs it (docs/architecture.md, "Time"):
    /// a line left out is all a clock could change, and the throttle's windows are tested apart.
    package static let perDevice = LogThrottle(perInterval: 20, interval: .seconds(1), clock: SystemClock())

    /// What the windows are measured on (docs/architecture.md, "Time").
    package let clock: any HeraldClock

    package init(perInterval: Int, interval: Duration, clock: any HeraldClock) {
        self.clock = clock
        self.perInterval = perInterval
        self.interval = interval
    }

    /// Whether a line of `kind` may be written now: nil when not; else how many lines of that kind
    /// were left out since the last one written.
    package func admit(_ kind: String) -> Int? { admit(kind, now: clock.now) }

    /// `admit` at `now`.
    package func admit(_ kind: String, now: HeraldInstant) -> Int? {
        windows.withLock { table in
            var window = table[kind] ?? (now, 0, 0)
            if now - window.start >= interval { window = (now, 0, window.suppressed) }
            guard window.count < perInterval else {
                window.suppressed += 1
                table[kind] = window
                return nil
            }
            let suppressed = window.suppressed
            window.count += 1
            window.suppressed = 0
            table[kind] = window
            if table.count > 1000 { table.removeAll() }
            return suppressed
        }
    }
}
