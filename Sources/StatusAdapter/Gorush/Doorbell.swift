import HeraldCore
import Synchronization

/// Wakes one waiting task: `ring()` ends the current `wait(upTo:)` at once, or the next one if
/// nobody waits yet; a wait also ends by itself after its timeout, and when its task is cancelled.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    /// What a wait's timeout is measured on (docs/architecture.md, "Time").
    let clock: any HeraldClock

    init(clock: any HeraldClock) { self.clock = clock }

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns when rung, after `timeout`, or at once when the task is cancelled. One task waits
    /// at a time.
    func wait(upTo timeout: Duration) async {
        await withTaskCancellationHandler {
            await waitForRingOrTimeout(timeout)
        } onCancel: {
            ring()
        }
    }

    private func waitForRingOrTimeout(_ timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do { try await self.clock.wait(timeout) } catch { return }
                self.ring()
            }
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.rung {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
            group.cancelAll()
        }
    }
}
