import NIOCore
import Synchronization

/// A counting semaphore for async code: at most `limit` holders at once, the others wait. A waiter
/// whose task is cancelled leaves the queue at once and gets `CancellationError`.
///
/// Waiters are served by turn: each waits in its source's queue (`acquire(turn:)`, the request's
/// `RequestSource`), and a released slot goes to the first waiter of the next source in turn, so
/// one sender's thousand queued requests delay another's by one slot each, not by a thousand
/// (docs/operations.md, "Sources"). Waiters of one source, and those with no source, are served in
/// arrival order. Used for an origin's connections and an HTTP/2 connection's streams. The queues
/// are ring buffers: thousands of requests may wait, and a release hands the slot to the next
/// without moving the others.
package final class AsyncLimiter: Sendable {
    package let limit: Int
    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var held = 0
        var nextId = 0
        /// Each source's waiters, in arrival order.
        var queues: [RequestSource?: CircularBuffer<Waiter>] = [:]
        /// Each source that has waiters, once, in the order they are served.
        var turns = CircularBuffer<RequestSource?>()
        var waiting = 0
        var cancelled: Set<Int> = []

        mutating func enqueue(_ waiter: Waiter, turn: RequestSource?) {
            if queues[turn, default: CircularBuffer()].isEmpty { turns.append(turn) }
            queues[turn, default: CircularBuffer()].append(waiter)
            waiting += 1
        }

        /// The first waiter of the source whose turn it is; that source goes to the back of the turns.
        mutating func next() -> Waiter? {
            guard let turn = turns.popFirst(), var queue = queues.removeValue(forKey: turn), let waiter = queue.popFirst() else {
                return nil
            }
            if !queue.isEmpty {
                queues[turn] = queue
                turns.append(turn)
            }
            waiting -= 1
            return waiter
        }

        mutating func remove(_ id: Int, turn: RequestSource?) -> Waiter? {
            guard var queue = queues.removeValue(forKey: turn), let index = queue.firstIndex(where: { $0.id == id }) else {
                return nil
            }
            let waiter = queue.remove(at: index)
            if queue.isEmpty {
                if let position = turns.firstIndex(where: { $0 == turn }) { turns.remove(at: position) }
            } else {
                queues[turn] = queue
            }
            waiting -= 1
            return waiter
        }
    }
    private let state = Mutex(State())

    package init(limit: Int) { self.limit = max(1, limit) }

    package var inUse: Int { state.withLock { $0.held } }
    package var waiting: Int { state.withLock { $0.waiting } }

    /// Takes a slot, waiting in `turn`'s queue while none is free.
    package func acquire(turn: RequestSource? = nil) async throws {
        try Task.checkCancellation()
        // A free slot and nobody queued: taken without suspending.
        let id = state.withLock { s -> Int? in
            if s.held < limit && s.waiting == 0 {
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
                    if s.held < limit && s.waiting == 0 {
                        s.held += 1
                        return true
                    }
                    s.enqueue(Waiter(id: id, continuation: continuation), turn: turn)
                    return false
                }
                switch granted {
                case true?: continuation.resume()
                case nil: continuation.resume(throwing: CancellationError())
                case false?: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                if let waiter = s.remove(id, turn: turn) { return waiter }
                // Not queued yet: the continuation body sees this mark and does not queue.
                s.cancelled.insert(id)
                return nil
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
        // Granted after cancellation was marked but before it was read: nothing stays marked.
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    package func release() {
        let next = state.withLock { s -> Waiter? in
            guard let waiter = s.next() else {
                s.held -= 1
                return nil
            }
            return waiter  // the slot passes straight to the next waiter
        }
        next?.continuation.resume()
    }

    package func withPermit<T>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }
}
