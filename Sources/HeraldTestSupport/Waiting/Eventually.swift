import Foundation

/// Waits until `condition` holds, asking it again every 10 ms, for at most `limit` (60 s by
/// default: long enough for a loaded machine, and a test that passes ends as soon as the condition
/// holds). Returns whether it held. What a test waits on when the event it needs is only visible
/// as state (a fake's record, a metric, a row in a store): never a pause of a guessed length.
/// This helper is where the test suite sleeps (`TestSleepGuardTests`).
@discardableResult
package func eventually(within limit: Duration = .seconds(60), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
}
