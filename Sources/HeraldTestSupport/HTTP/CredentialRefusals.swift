import Synchronization

/// A fake upstream's "refuse the credential" switch: `refuse(count)` makes the next `count`
/// distinct credentials the fake is shown refused, for good, whatever their validity, as a
/// provider refuses an expired or revoked token. A client that sends a refused credential again
/// is refused again, so a test sees whether Herald dropped it.
package final class CredentialRefusals: Sendable {
    private struct State {
        var toRefuse = 0
        var refused: [String] = []
    }

    private let state = Mutex(State())

    package init() {}

    /// The next `count` distinct credentials presented are refused.
    package func refuse(_ count: Int) { state.withLock { $0.toRefuse += count } }

    /// The credentials refused so far, in the order they were first refused.
    package var refused: [String] { state.withLock { $0.refused } }

    /// Whether `credential` is refused (counting it against `refuse`'s count when first seen).
    package func isRefused(_ credential: String) -> Bool {
        state.withLock { s in
            if s.refused.contains(credential) { return true }
            guard s.toRefuse > 0 else { return false }
            s.toRefuse -= 1
            s.refused.append(credential)
            return true
        }
    }
}
