import NIOCore

/// The requests waiting for a slot, as a value (docs/architecture.md, "Admission"): each waits in
/// its source's queue, and the next slot goes to the first waiter of the next source in turn, so
/// one sender's thousand queued requests delay another's by one slot each, not by a thousand.
/// Waiters of one source, and those with no source, are served in arrival order. A waiter may
/// carry the instant it gives up at: `expire(now:)` takes out every waiter past it. Tested without
/// a task (`AdmissionQueueTests`); `AsyncLimiter` is its one user with continuations.
///
/// The queues are ring buffers: thousands of requests may wait, and a slot handed on moves no
/// other waiter.
package struct AdmissionQueue<Waiter> {
    private struct Entry {
        var id: Int
        var waiter: Waiter
        var deadline: HeraldInstant?
    }

    /// Each source's waiters, in arrival order.
    private var queues: [RequestSource?: CircularBuffer<Entry>] = [:]
    /// Each source that has waiters, once, in the order they are served.
    private var turns = CircularBuffer<RequestSource?>()
    /// How many wait, in all queues.
    package private(set) var count = 0
    /// No waiter's deadline is before this (nil: none has one); `expire(now:)` looks no earlier.
    private var nextCheck: HeraldInstant?

    package init() {}

    package var isEmpty: Bool { count == 0 }

    /// Queues `waiter` (named `id`) behind its source's earlier ones, until `deadline` if given.
    /// Waiters of one source are expected to share a wait, so that the first of a queue is the
    /// first to give up.
    package mutating func append(_ waiter: Waiter, id: Int, turn: RequestSource?, deadline: HeraldInstant? = nil) {
        if queues[turn, default: CircularBuffer()].isEmpty { turns.append(turn) }
        queues[turn, default: CircularBuffer()].append(Entry(id: id, waiter: waiter, deadline: deadline))
        if let deadline { nextCheck = min(nextCheck ?? deadline, deadline) }
        count += 1
    }

    /// The first waiter of the source whose turn it is; that source goes to the back of the turns.
    package mutating func next() -> Waiter? {
        guard let turn = turns.popFirst(), var queue = queues.removeValue(forKey: turn), let entry = queue.popFirst() else {
            return nil
        }
        if !queue.isEmpty {
            queues[turn] = queue
            turns.append(turn)
        }
        count -= 1
        return entry.waiter
    }

    /// Takes out the waiter `id` of `turn`'s queue (its task was cancelled), if it waits there.
    package mutating func remove(_ id: Int, turn: RequestSource?) -> Waiter? {
        // Looked up before it is taken out: a waiter already served leaves its source's others queued.
        guard let index = queues[turn]?.firstIndex(where: { $0.id == id }), var queue = queues.removeValue(forKey: turn) else {
            return nil
        }
        let entry = queue.remove(at: index)
        if queue.isEmpty {
            if let position = turns.firstIndex(where: { $0 == turn }) { turns.remove(at: position) }
        } else {
            queues[turn] = queue
        }
        count -= 1
        return entry.waiter
    }

    /// Takes out every waiter whose deadline is at or before `now`, for its owner to fail. Looks
    /// only at the first waiters of each source's queue, which give up first, and at none before
    /// the earliest of their deadlines.
    package mutating func expire(now: HeraldInstant) -> [Waiter] {
        guard let check = nextCheck, check <= now else { return [] }
        var expired: [Waiter] = []
        var emptied: [RequestSource?] = []
        var earliest: HeraldInstant?
        for turn in turns {
            guard let deadline = queues[turn]?.first?.deadline else { continue }
            guard deadline <= now else {
                earliest = min(earliest ?? deadline, deadline)
                continue
            }
            guard var queue = queues.removeValue(forKey: turn) else { continue }
            while let first = queue.first, let deadline = first.deadline, deadline <= now {
                expired.append(first.waiter)
                queue.removeFirst()
            }
            if let first = queue.first {
                if let deadline = first.deadline { earliest = min(earliest ?? deadline, deadline) }
                queues[turn] = queue
            } else {
                emptied.append(turn)
            }
        }
        for turn in emptied {
            if let position = turns.firstIndex(where: { $0 == turn }) { turns.remove(at: position) }
        }
        nextCheck = earliest
        count -= expired.count
        return expired
    }
}
