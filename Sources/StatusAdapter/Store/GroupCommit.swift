import Synchronization

/// Writes that arrive while one is being written go together in the next write.
///
/// The first caller writes its entry alone. Callers arriving meanwhile queue; when the write ends,
/// the first of them writes everything queued in one go (`write` gets the batch), and so on. Each
/// caller returns once its own entry's batch is written, with that batch's error if it failed, so
/// a caller still never answers before its entry is stored. Under load, N concurrent writes cost
/// one transaction and one hop to the database's writer instead of N.
final class GroupCommit<Entry: Sendable>: Sendable {
    private typealias Waiter = CheckedContinuation<Turn, Never>
    private enum Turn {
        /// Write `entries`, then wake `others` with the result.
        case lead(entries: [Entry], others: [Waiter])
        case done(Result<Void, any Error>)
    }
    private struct State {
        var writing = false
        var queued: [(entry: Entry, waiter: Waiter)] = []
    }

    private let state = Mutex(State())
    private let write: @Sendable ([Entry]) async throws -> Void

    init(write: @escaping @Sendable ([Entry]) async throws -> Void) {
        self.write = write
    }

    /// Callers waiting for a write to end (for tests).
    var queuedCount: Int { state.withLock { $0.queued.count } }

    func submit(_ entry: Entry) async throws {
        let turn = await withCheckedContinuation { (waiter: Waiter) in
            let lead = state.withLock { state -> Bool in
                guard !state.writing else {
                    state.queued.append((entry, waiter))
                    return false
                }
                state.writing = true
                return true
            }
            if lead { waiter.resume(returning: .lead(entries: [entry], others: [])) }
        }
        switch turn {
        case .done(let result):
            try result.get()
        case .lead(let entries, let others):
            let result: Result<Void, any Error>
            do {
                try await write(entries)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            handOver()
            for waiter in others { waiter.resume(returning: .done(result)) }
            try result.get()
        }
    }

    /// Gives the next batch to the first caller queued, or ends the writing.
    private func handOver() {
        let next = state.withLock { state -> [(entry: Entry, waiter: Waiter)] in
            defer { state.queued = [] }
            if state.queued.isEmpty { state.writing = false }
            return state.queued
        }
        guard let first = next.first else { return }
        first.waiter.resume(returning: .lead(entries: next.map(\.entry), others: next.dropFirst().map(\.waiter)))
    }
}
