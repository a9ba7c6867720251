import Foundation
import Synchronization

/// Something that happens once, which any number of tasks can wait for: what a test waits on
/// instead of time. `wait()` returns when the event is raised (at once if it already was), or
/// when the waiting task is cancelled.
package final class TestEvent: Sendable {
    private struct State {
        var raised = false
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    package init() {}

    package var isRaised: Bool { state.withLock { $0.raised } }

    package func raise() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.raised = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    package func wait() async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.raised || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
