import Synchronization

/// Requests in progress, and a wait until there are none: what a reload waits on before it closes
/// the pushkins those requests still use. The wait is an event, not a poll, and ends at once when
/// its task is cancelled.
package final class InFlight: Sendable {
    private struct State {
        var count = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    package var current: Int { state.withLock { $0.count } }

    package func enter() { state.withLock { $0.count += 1 } }

    package func leave() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.count -= 1
            guard s.count == 0, !s.waiters.isEmpty else { return [] }
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once none is in progress, or when the task is cancelled.
    package func untilNone() async {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.count == 0 || Task.isCancelled { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
