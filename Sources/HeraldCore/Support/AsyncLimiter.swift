package import Metrics
import NIOCore
import Synchronization

/// A counting semaphore for async code: at most `limit` holders at once, the others wait in an
/// `AdmissionQueue` (by source in turn: `acquire(turn:)` with the request's `RequestSource`). A
/// waiter whose task is cancelled leaves the queue at once and gets `CancellationError`; with a
/// `maxWait`, one still waiting that long gets `AdmissionTimeout`, found when a slot frees or
/// another request arrives. Used for an origin's connections, an HTTP/2 pool's streams
/// (`HTTP2Pool`) and a fan-out's window.
package final class AsyncLimiter: Sendable {
    package let limit: Int
    /// How long a waiter waits at most (nil: until it is served or cancelled).
    package let maxWait: Duration?
    /// What waits are measured on; without one, nothing is (no `maxWait`, no queue time).
    private let clock: (any HeraldClock)?
    private let metrics: AdmissionMetrics?

    private struct State {
        var held = 0
        var nextId = 0
        var queue = AdmissionQueue<CheckedContinuation<Void, any Error>>()
        var cancelled: Set<Int> = []
    }
    private let state = Mutex(State())

    /// A limiter whose waiters wait until served or cancelled.
    package convenience init(limit: Int) { self.init(limit: limit, maxWait: nil, clock: nil, metrics: nil) }

    /// With a `clock`, a waiter waits at most `maxWait` (nil: no bound) and `metrics` get each
    /// request's wait.
    package init(limit: Int, maxWait: Duration?, clock: (any HeraldClock)?, metrics: AdmissionMetrics? = nil) {
        self.limit = max(1, limit)
        self.maxWait = clock == nil ? nil : maxWait
        self.clock = clock
        self.metrics = clock == nil ? nil : metrics
    }

    package var inUse: Int { state.withLock { $0.held } }
    package var waiting: Int { state.withLock { $0.queue.count } }

    /// Takes a slot, waiting in `turn`'s queue while none is free.
    package func acquire(turn: RequestSource? = nil) async throws {
        try Task.checkCancellation()
        // A free slot and nobody queued: taken without suspending.
        let id = state.withLock { s -> Int? in
            if s.held < limit && s.queue.isEmpty {
                s.held += 1
                return nil
            }
            s.nextId += 1
            return s.nextId
        }
        guard let id else {
            metrics?.queueTime.recordNanoseconds(0)
            return
        }
        let start = clock?.now
        let deadline = start.flatMap { start in maxWait.map { start.advanced(by: $0) } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (granted, expired, waiting) = state.withLock { s -> (Bool?, [CheckedContinuation<Void, any Error>], Int) in
                    let expired = start.map { s.queue.expire(now: $0) } ?? []
                    if s.cancelled.remove(id) != nil { return (nil, expired, s.queue.count) }
                    if s.held < limit && s.queue.isEmpty {
                        s.held += 1
                        return (true, expired, 0)
                    }
                    s.queue.append(continuation, id: id, turn: turn, deadline: deadline)
                    return (false, expired, s.queue.count)
                }
                for waiter in expired { waiter.resume(throwing: AdmissionTimeout()) }
                metrics?.pending.record(waiting)
                switch granted {
                case true?: continuation.resume()
                case nil: continuation.resume(throwing: CancellationError())
                case false?: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                if let waiter = s.queue.remove(id, turn: turn) { return waiter }
                // Not queued yet: the continuation body sees this mark and does not queue.
                s.cancelled.insert(id)
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
        // Granted after cancellation was marked but before it was read: nothing stays marked.
        state.withLock { _ = $0.cancelled.remove(id) }
        if let metrics, let clock, let start { metrics.queueTime.recordNanoseconds((clock.now - start).nanoseconds) }
    }

    package func release() {
        let now: HeraldInstant? = maxWait == nil ? nil : clock?.now
        let (next, expired, waiting) = state.withLock {
            s -> (CheckedContinuation<Void, any Error>?, [CheckedContinuation<Void, any Error>], Int) in
            let expired = now.map { s.queue.expire(now: $0) } ?? []
            guard let waiter = s.queue.next() else {
                s.held -= 1
                return (nil, expired, 0)
            }
            return (waiter, expired, s.queue.count)  // the slot passes straight to the next waiter
        }
        for waiter in expired { waiter.resume(throwing: AdmissionTimeout()) }
        if next != nil || !expired.isEmpty { metrics?.pending.record(waiting) }
        next?.resume()
    }

    package func withPermit<T>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }
}

/// A request waited for a slot longer than its limiter's `maxWait`: nothing was sent for it.
package struct AdmissionTimeout: Error, Sendable, CustomStringConvertible {
    package init() {}
    package var description: String { "no slot free within the wait allowed" }
}

/// What an admission's queue reports: how long each request waited for its slot, and how many
/// wait (Sygnal's `sygnal_apns_queue_time` and `sygnal_pending_apns_requests`).
package struct AdmissionMetrics: Sendable {
    package let queueTime: Metrics.Timer
    package let pending: Gauge

    package init(queueTime: Metrics.Timer, pending: Gauge) {
        self.queueTime = queueTime
        self.pending = pending
    }
}
