package import HeraldCore
import Synchronization

/// `inflight_request_limit`: concurrent device dispatches allowed per app, shared fairly between
/// the sources that use them (docs/operations.md, "Sources").
///
/// While the app has room, every source is admitted. When it is full, each active source (one with
/// a dispatch in flight, and the one asking) has an equal share, `limit / active`: a source under
/// its share is admitted even so (it is admitted first; the app's total may pass the limit by at
/// most the newcomers' shares, while the others' calls end), and a source at or over its share is
/// refused (`overShare`: the sender is told to back off). A dispatch with no source (an ADAMANT
/// poll, `herald send-test`) only counts in the total.
package final class InflightLimit: Sendable {
    package let limit: Int
    private struct State {
        var total = 0
        /// The active sources' dispatches in flight (a source leaves when it has none).
        var held: [RequestSource: Int] = [:]
    }
    private let state: Mutex<State>

    /// Why nothing was granted.
    package enum Refusal: Sendable, Equatable {
        /// The app is full and no source is over its share.
        case full
        /// The app is full and this source holds its share.
        case overShare
    }

    package init(limit: Int) {
        self.limit = limit
        var initial = State()
        initial.held.reserveCapacity(64)
        state = Mutex(initial)
    }

    /// Takes as many of `wanted` slots as `source` may have: the slots granted, and why none were
    /// when none were.
    package func acquire(upTo wanted: Int, source: RequestSource? = nil) -> (slots: Int, refusal: Refusal?) {
        state.withLock { s in
            let held = source.map { s.held[$0] ?? 0 } ?? 0
            let active = s.held.count + (source != nil && held == 0 ? 1 : 0)
            let share = max(1, limit / max(1, active))
            var granted = 0
            while granted < wanted {
                if s.total + granted < limit || (source != nil && active > 1 && held + granted < share) {
                    granted += 1
                } else {
                    break
                }
            }
            guard granted > 0 else { return (0, source != nil && active > 1 && held >= share ? .overShare : .full) }
            s.total += granted
            if let source { s.held[source, default: 0] += granted }
            return (granted, nil)
        }
    }

    package func release(count n: Int, source: RequestSource? = nil) {
        state.withLock { s in
            s.total -= n
            guard let source, let held = s.held[source] else { return }
            if held > n { s.held[source] = held - n } else { s.held.removeValue(forKey: source) }
        }
    }

    /// Dispatches in flight (for tests and `/health`).
    package var inUse: Int { state.withLock { $0.total } }
}
