import NIOCore
import Synchronization

/// A counting semaphore for async code: at most `limit` holders at once, the others wait in
/// order. A waiter whose task is cancelled leaves the queue at once and gets `CancellationError`.
/// Used to cap the streams in flight on one APNs connection. The queue is a ring buffer: thousands
/// of requests may wait (a notify with 100 devices from each of 64 homeserver connections), and a
/// release hands the slot to the first of them without moving the others.
package final class AsyncLimiter: Sendable {
    package let limit: Int
    private struct State {
        var held = 0
        var nextId = 0
        var waiters = CircularBuffer<(id: Int, continuation: CheckedContinuation<Void, any Error>)>()
        var cancelled: Set<Int> = []
    }
    private let state = Mutex(State())

    package init(limit: Int) { self.limit = max(1, limit) }

    package var inUse: Int { state.withLock { $0.held } }
    package var waiting: Int { state.withLock { $0.waiters.count } }

    package func acquire() async throws {
        try Task.checkCancellation()
        // A free slot and nobody queued: taken without suspending.
        let id = state.withLock { s -> Int? in
            if s.held < limit && s.waiters.isEmpty {
                s.held += 1
                return nil
            }
            s.nextId += 1
            return s.nextId
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { s -> Bool? in
                    if s.cancelled.remove(id) != nil { return nil }
                    if s.held < limit {
                        s.held += 1
                        return true
                    }
                    s.waiters.append((id, continuation))
                    return false
                }
                switch granted {
                case true?: continuation.resume()
                case nil: continuation.resume(throwing: CancellationError())
                case false?: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                if let index = s.waiters.firstIndex(where: { $0.id == id }) { return s.waiters.remove(at: index).continuation }
                // Not queued yet: the continuation body sees this mark and does not queue.
                s.cancelled.insert(id)
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
        // Granted after cancellation was marked but before it was read: nothing stays marked.
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    package func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, any Error>? in
            if s.waiters.isEmpty {
                s.held -= 1
                return nil
            }
            return s.waiters.removeFirst().continuation  // the slot passes straight to the next waiter
        }
        next?.resume()
    }

    package func withPermit<T>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }
}
