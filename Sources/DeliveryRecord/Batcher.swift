import Synchronization

/// Calls of concurrent callers joined into one (a group commit, as a database does with its log):
/// each caller's items join the next run of `body`, which starts as soon as fewer than
/// `concurrency` runs are under way. There is no timer: a caller alone runs at once; under load,
/// the items of every caller that came while a run was under way make the next run, up to
/// `maxItems` (a caller's items are never split). Each caller gets the answers to its own items, in
/// their order; a run that throws fails each of its callers with that error, and, when
/// `failsQueue` says so of the error (a store that did not answer in time), the callers waiting
/// for the next run too: they would wait for a run that can be expected to fail the same way.
///
/// A run is led by one of its callers, in its own task: the first, or the one a finished run hands
/// the next batch to, so that no caller runs others' work after its own has been answered and no
/// task of its own is made.
package final class Batcher<Item: Sendable, Answer: Sendable>: Sendable {
    /// A run answered a different number of answers than it had items.
    package struct Mismatch: Error, CustomStringConvertible {
        package let items: Int
        package let answers: Int
        package var description: String { "a batch of \(items) items was answered \(answers) times" }
    }

    /// What a waiting caller is woken with: its answers, or the batch to lead.
    private enum Turn: Sendable {
        case answered(Result<[Answer], any Error>)
        case lead([Waiter])
    }

    private struct Waiter: Sendable {
        let id: UInt64
        let items: [Item]
        let continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        /// Callers waiting for a run, oldest first. Empty whenever fewer than `concurrency` runs
        /// are under way: a run that ends with callers waiting hands them on instead of ending.
        var waiting: [Waiter] = []
        var running = 0
        var nextId: UInt64 = 0

        /// The oldest waiters whose items fit in `maxItems` (at least one).
        mutating func take(_ maxItems: Int) -> [Waiter] {
            var count = 0
            var taken = 0
            for waiter in waiting {
                guard taken == 0 || count + waiter.items.count <= maxItems else { break }
                count += waiter.items.count
                taken += 1
            }
            defer { waiting.removeFirst(taken) }
            return Array(waiting.prefix(taken))
        }
    }

    private let state = Mutex(State())
    package let concurrency: Int
    package let maxItems: Int
    private let body: @Sendable ([Item]) async throws -> [Answer]
    private let failsQueue: @Sendable (any Error) -> Bool

    /// `body` answers a batch's items in their order.
    package init(
        concurrency: Int = 1, maxItems: Int = 1000, failsQueue: @escaping @Sendable (any Error) -> Bool = { _ in false },
        _ body: @escaping @Sendable ([Item]) async throws -> [Answer]
    ) {
        self.concurrency = max(1, concurrency)
        self.maxItems = max(1, maxItems)
        self.failsQueue = failsQueue
        self.body = body
    }

    /// Runs in use and callers waiting, for tests.
    package var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }

    /// The answers to `items`, from the run they joined.
    package func run(_ items: [Item]) async throws -> [Answer] {
        guard !items.isEmpty else { return [] }
        let id = state.withLock { state in
            defer { state.nextId &+= 1 }
            return state.nextId
        }
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let batch = state.withLock { state -> [Waiter]? in
                state.waiting.append(Waiter(id: id, items: items, continuation: continuation))
                guard state.running < concurrency else { return nil }
                state.running += 1
                return state.take(maxItems)
            }
            if let batch { continuation.resume(returning: .lead(batch)) }
        }
        switch turn {
        case .answered(let result): return try result.get()
        case .lead(let batch): return try await lead(batch, me: id).get()
        }
    }

    /// Runs `batch`, answers its other callers, hands the next batch on (or frees the run), and
    /// returns the answers of `me`, the caller leading it.
    private func lead(_ batch: [Waiter], me: UInt64) async -> Result<[Answer], any Error> {
        let items = batch.count == 1 ? batch[0].items : batch.flatMap(\.items)
        let result: Result<[Answer], any Error>
        do {
            let answers = try await body(items)
            result = answers.count == items.count ? .success(answers) : .failure(Mismatch(items: items.count, answers: answers.count))
        } catch {
            result = .failure(error)
        }
        var mine: Result<[Answer], any Error> = .success([])
        var offset = 0
        for waiter in batch {
            let count = waiter.items.count
            let answers = batch.count == 1 ? result : result.map { Array($0[offset..<offset + count]) }
            offset += count
            if waiter.id == me { mine = answers } else { waiter.continuation.resume(returning: .answered(answers)) }
        }
        if case .failure(let error) = result, failsQueue(error) {
            let queued = state.withLock { state in
                defer {
                    state.waiting.removeAll()
                    state.running -= 1
                }
                return state.waiting
            }
            for waiter in queued { waiter.continuation.resume(returning: .answered(.failure(error))) }
            return mine
        }
        let next = state.withLock { state -> [Waiter]? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.take(maxItems)
        }
        if let next, let leader = next.first { leader.continuation.resume(returning: .lead(next)) }
        return mine
    }
}
