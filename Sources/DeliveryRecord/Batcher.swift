import ServiceLifecycle
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
/// task of its own is made. Items handed over by a caller that does not wait (`hand`: a notify's
/// finishes after its answer) are run by the batcher's own service (`leader`), whose task leads
/// every batch a handed item starts; their answers go to each one's `landed`.
package final class Batcher<Item: Sendable, Answer: Sendable>: Sendable {
    /// Handed items came after the leader had stopped (the shutdown is over).
    package struct Stopped: Error, CustomStringConvertible {
        package var description: String { "the statements' runner has stopped" }
    }

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

    /// Who waits for a run's answers: a caller's task, or a handed item's `landed`.
    private enum Reply: Sendable {
        case caller(CheckedContinuation<Turn, Never>)
        case handed(@Sendable (Result<[Answer], any Error>) -> Void)

        func answer(_ result: Result<[Answer], any Error>) {
            switch self {
            case .caller(let continuation): continuation.resume(returning: .answered(result))
            case .handed(let landed): landed(result)
            }
        }
    }

    private struct Waiter: Sendable {
        let id: UInt64
        let items: [Item]
        let reply: Reply
    }

    /// The leader's side: batches a handed item starts, and the leader's task while it waits.
    private struct Leading {
        var batches: [[Waiter]] = []
        var idle: [CheckedContinuation<[Waiter]?, Never>] = []
        var stopped = false
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
    private let leading = Mutex(Leading())
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
                state.waiting.append(Waiter(id: id, items: items, reply: .caller(continuation)))
                guard state.running < concurrency else { return nil }
                state.running += 1
                return state.take(maxItems)
            }
            if let batch { start(batch) }
        }
        switch turn {
        case .answered(let result): return try result.get()
        case .lead(let batch): return try await lead(batch, me: id).get()
        }
    }

    /// Hands `items` over without waiting: they join the next run, as a caller's do, and
    /// `landed` gets their answers (on the task that ran them). A run they start is led by the
    /// batcher's service (`leader`); once that has stopped, they fail with `Stopped` at once.
    package func hand(_ items: [Item], landed: @escaping @Sendable (Result<[Answer], any Error>) -> Void) {
        guard !items.isEmpty else { return landed(.success([])) }
        let batch = state.withLock { state -> [Waiter]? in
            defer { state.nextId &+= 1 }
            state.waiting.append(Waiter(id: state.nextId, items: items, reply: .handed(landed)))
            guard state.running < concurrency else { return nil }
            state.running += 1
            return state.take(maxItems)
        }
        if let batch { start(batch) }
    }

    /// Starts a run of `batch`: its first caller leads it, or, when that is a handed item, the
    /// leader's task does. Once the leader has stopped, a batch it would lead fails at once, and
    /// the next one starts.
    private func start(_ batch: [Waiter]) {
        var batch = batch
        while let first = batch.first {
            if case .caller(let continuation) = first.reply { return continuation.resume(returning: .lead(batch)) }
            let (stopped, idle) = leading.withLock { leading -> (Bool, CheckedContinuation<[Waiter]?, Never>?) in
                if leading.stopped { return (true, nil) }
                if !leading.idle.isEmpty { return (false, leading.idle.removeFirst()) }
                leading.batches.append(batch)
                return (false, nil)
            }
            if !stopped {
                // To the leader now when it waits, else once it has led the batch in hand.
                idle?.resume(returning: batch)
                return
            }
            for waiter in batch { waiter.reply.answer(.failure(Stopped())) }
            guard let next = takeNextOrEnd() else { return }
            batch = next
        }
    }

    /// The next batch of the run that just ended, or nil when none waits (the run is freed).
    private func takeNextOrEnd() -> [Waiter]? {
        state.withLock { state -> [Waiter]? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.take(maxItems)
        }
    }

    /// Leads the batches handed items start, `concurrency` at a time, on `executor` when given,
    /// until the graceful shutdown (having led those already started) or its cancellation.
    package struct Leader: Service {
        let batcher: Batcher
        let executor: (any TaskExecutor)?

        package func run() async {
            await withGracefulShutdownHandler {
                await withTaskExecutorPreference(executor) {
                    await withDiscardingTaskGroup { group in
                        for _ in 0..<batcher.concurrency {
                            group.addTask {
                                while let batch = await batcher.nextHanded() { _ = await batcher.lead(batch, me: nil) }
                            }
                        }
                    }
                }
            } onGracefulShutdown: {
                batcher.stopLeading()
            }
        }
    }

    /// Its service, which leads the runs handed items start (`hand`).
    package func leader(on executor: (any TaskExecutor)? = nil) -> Leader { Leader(batcher: self, executor: executor) }

    /// A batch to lead, or nil once stopped and none is left.
    private func nextHanded() async -> [Waiter]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Waiter]?, Never>) in
                let ready = leading.withLock { leading -> [Waiter]?? in
                    if !leading.batches.isEmpty { return .some(leading.batches.removeFirst()) }
                    if leading.stopped || Task.isCancelled { return .some(nil) }
                    leading.idle.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            stopLeading()
        }
    }

    /// No batch is led any more once those started are: a later one fails at once (`Stopped`).
    private func stopLeading() {
        let idle = leading.withLock { leading in
            defer {
                leading.stopped = true
                leading.idle.removeAll()
            }
            return leading.idle
        }
        for waiter in idle { waiter.resume(returning: nil) }
    }

    /// Runs `batch`, answers its other callers, hands the next batch on (or frees the run), and
    /// returns the answers of `me`, the caller leading it (nil: the leader's task).
    private func lead(_ batch: [Waiter], me: UInt64?) async -> Result<[Answer], any Error> {
        var items = batch.first?.items ?? []
        for waiter in batch.dropFirst() { items.append(contentsOf: waiter.items) }
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
            if waiter.id == me { mine = answers } else { waiter.reply.answer(answers) }
        }
        if case .failure(let error) = result, failsQueue(error) {
            let queued = state.withLock { state in
                defer {
                    state.waiting.removeAll()
                    state.running -= 1
                }
                return state.waiting
            }
            for waiter in queued { waiter.reply.answer(.failure(error)) }
            return mine
        }
        if let next = takeNextOrEnd() { start(next) }
        return mine
    }
}
