import Synchronization

/// Requests in progress, and a wait until there are none: what a reload waits on before it closes
/// the pushkins those requests still use. The wait is an event, not a poll, and ends at once when
/// its task is cancelled.
package final class InFlight: Sendable {
    private struct Waiters {
        var next: UInt64 = 0
        var waiting: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    /// An atomic on the request path; the lock only when the count reaches 0 or a wait begins.
    private let count = Atomic<Int>(0)
    private let waiters = Mutex(Waiters())

    package init() {}

    package var current: Int { count.load(ordering: .acquiring) }

    package func enter() { count.add(1, ordering: .relaxed) }

    package func leave() {
        guard count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        let ready = waiters.withLock { w -> [CheckedContinuation<Void, Never>] in
            defer { w.waiting = [:] }
            return Array(w.waiting.values)
        }
        for waiter in ready { waiter.resume() }
    }

    /// Returns once none is in progress, or when the task is cancelled.
    package func untilNone() async {
        let id = waiters.withLock { w -> UInt64 in
            w.next += 1
            return w.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Checked under the lock that `leave` takes once the count is 0: a wait that
                // begins after that finds 0 here, one that began before is resumed there.
                let now = waiters.withLock { w -> Bool in
                    if count.load(ordering: .acquiring) == 0 || Task.isCancelled { return true }
                    w.waiting[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            waiters.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
        }
    }
}
