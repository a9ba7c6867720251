import Foundation
import HeraldCore
import Logging
import ServiceLifecycle
import Synchronization

/// The answers given to push requests, kept so that a duplicate gets the same answer again
/// (docs/status-protocol.md, "Herald's decisions"), and written to the store behind the answer.
///
/// An answer is remembered here at once and found here until the store holds it, so a request is
/// answered without waiting for a write and a duplicate arriving meanwhile still finds it. One
/// writer (`run`, in the Status service) stores in one transaction whatever was answered in the
/// `batchWindow` after the first answer it wakes for, and while it wrote the batch before: a busy
/// server writes many answers per commit, the writer wakes once for them, and no request waits
/// for a commit. At most `maxPending` answers wait for the writer; beyond that a request waits for it to
/// catch up. On graceful shutdown the writer stores what is left before the store is closed.
///
/// Most push requests are new, and the store would be asked about each for nothing. Where this
/// process is the store's only writer (SQLite), the ids of what the store holds are loaded when the
/// writer starts, and every answer remembered since is added to a `RecentIDFilter`: an id it has
/// never seen is answered as new without a read. Until the ids are loaded, and always where other
/// instances write the store too (PostgreSQL), every lookup asks the store.
final class ResponseCache: Sendable {
    private struct Pending: Sendable {
        var response: [UInt8]
        var expires: Date
        /// Which remembering this is (an id answered again after its entry expired is a new one).
        var sequence: UInt64
    }

    private struct State {
        /// Remembered and not yet in the store (taken by the writer or not).
        var pending: [[UInt8]: Pending] = [:]
        /// Not yet taken by the writer, in the order they were answered.
        var unwritten: [(entry: CachedResponse, sequence: UInt64)] = []
        var sequence: UInt64 = 0
        /// The writer, waiting for answers to write.
        var writer: CheckedContinuation<Void, Never>?
        /// Requests waiting for room (`maxPending` reached).
        var full: [CheckedContinuation<Void, Never>] = []
        var stopping = false
        /// The writer has ended: an answer remembered now is written by whoever remembers it.
        var finished = false
        /// The ids that may be in the store, once they are loaded (`loadStoredIDs`).
        var stored: RecentIDFilter?
        /// The digests of the ids remembered while they load; nil once they are (or cannot be).
        var rememberedBeforeLoad: [UInt64]? = []
    }

    private let state = Mutex(State())
    private let store: any StatusStore
    /// The store's bound on entries (`response_cache_limit`).
    let limit: Int
    /// `response_cache_max_pending`.
    let maxPending: Int
    private let logger: Logger
    /// What the batch window is measured on (docs/architecture.md, "Time").
    let clock: any HeraldClock
    /// How long the writer gathers answers before it writes them.
    static let batchWindow = Duration.milliseconds(5)

    init(store: any StatusStore, limit: Int, maxPending: Int, logger: Logger, clock: any HeraldClock) {
        self.clock = clock
        self.store = store
        self.limit = limit
        self.maxPending = max(1, maxPending)
        self.logger = logger
    }

    /// Answers remembered and not yet stored (for tests and diagnostics).
    var pendingCount: Int { state.withLock { $0.pending.count } }
    /// Requests waiting for room among the unwritten answers (for tests and diagnostics).
    var waitingForRoom: Int { state.withLock { $0.full.count } }
    /// Whether the writer was told to stop (for tests).
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// The answer given to `messageId`, if it is still to be kept at `now`.
    func response(to messageId: [UInt8], now: Date) async throws -> [UInt8]? {
        let (pending, mayBeStored) = state.withLock { s in (s.pending[messageId], s.stored?.mayContain(messageId) ?? true) }
        if let pending { return pending.expires > now ? pending.response : nil }
        guard mayBeStored else { return nil }
        return try await store.cachedResponse(messageId: messageId, now: now)
    }

    /// Remembers the answer to `messageId` until `expires`. Returns once it is remembered (it is
    /// found from then on); the store gets it with the writer's next batch.
    func remember(_ messageId: [UInt8], response: [UInt8], expires: Date) async {
        while true {
            let (added, writer, finished) = state.withLock { s -> (Bool, CheckedContinuation<Void, Never>?, Bool) in
                guard s.pending.count < maxPending || s.stopping else { return (false, nil, false) }
                s.sequence += 1
                s.pending[messageId] = Pending(response: response, expires: expires, sequence: s.sequence)
                s.unwritten.append((CachedResponse(messageId: messageId, response: response, expires: expires), s.sequence))
                s.stored?.insert(messageId)
                // Bounded: a server whose ids never load (no writer running) stops keeping them.
                if s.rememberedBeforeLoad?.count ?? 0 >= limit { s.rememberedBeforeLoad = nil }
                s.rememberedBeforeLoad?.append(RecentIDFilter.digest(messageId))
                defer { s.writer = nil }
                return (true, s.writer, s.finished)
            }
            if added {
                writer?.resume()
                // A request that outlived the shutdown's drain: no writer will take it.
                if finished { await flush() }
                return
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wait = state.withLock { s -> Bool in
                    guard s.pending.count >= maxPending && !s.stopping else { return false }
                    s.full.append(continuation)
                    return true
                }
                if !wait { continuation.resume() }
            }
        }
    }

    /// The writer: stores what is remembered, batch by batch, until graceful shutdown or
    /// cancellation, and then what is left.
    func run() async {
        await loadStoredIDs()
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                while await waitForAnswers() {
                    // Answers arriving in the next few milliseconds join this batch: under load a
                    // commit stores many, and the writer is woken once for them all.
                    if !state.withLock({ $0.stopping }) { try? await clock.wait(Self.batchWindow) }
                    if let batch = takeUnwritten() { await write(batch) }
                }
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
        // Whatever was answered up to the stop, then whatever came while that was written.
        await flush()
        state.withLock { $0.finished = true }
        await flush()
    }

    /// Loads the ids of the answers the store holds, where it is written by this process alone;
    /// from then on only the ids the filter may contain are looked up in the store.
    func loadStoredIDs() async {
        let ids: [UInt64]?
        do {
            ids = try await store.cachedMessageIds(now: clock.date, digest: RecentIDFilter.digest)
        } catch {
            logger.warning("Status response cache ids not loaded; every push request asks the store", metadata: ["error": "\(error)"])
            ids = nil
        }
        state.withLock { s in
            defer { s.rememberedBeforeLoad = nil }
            guard let ids, let early = s.rememberedBeforeLoad else { return }
            // A generation holds more than the store keeps (`limit`, and what it holds over the
            // limit until its next pruning), so every id the store holds is among the last two.
            var filter = RecentIDFilter(generation: max(limit + limit / 8, ids.count + early.count))
            for id in ids { filter.insert(digest: id) }
            for id in early { filter.insert(digest: id) }
            s.stored = filter
        }
    }

    /// Stores everything remembered so far.
    func flush() async {
        while let batch = takeUnwritten() { await write(batch) }
    }

    private func stop() {
        let writer = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.stopping = true
            defer { s.writer = nil }
            return s.writer
        }
        writer?.resume()
    }

    private func takeUnwritten() -> [(entry: CachedResponse, sequence: UInt64)]? {
        state.withLock { s in
            guard !s.unwritten.isEmpty else { return nil }
            defer { s.unwritten = [] }
            return s.unwritten
        }
    }

    /// Waits until there are answers to write (true) or the writer is stopped with none left (false).
    private func waitForAnswers() async -> Bool {
        while true {
            let ready = state.withLock { s -> Bool? in
                if !s.unwritten.isEmpty { return true }
                return s.stopping ? false : nil
            }
            if let ready { return ready }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wait = state.withLock { s -> Bool in
                    guard s.unwritten.isEmpty && !s.stopping else { return false }
                    s.writer = continuation
                    return true
                }
                if !wait { continuation.resume() }
            }
        }
    }

    /// Writes `batch`; its entries are then found in the store, or, if the write failed, not at
    /// all (a duplicate is then processed again, as after a crash).
    private func write(_ batch: [(entry: CachedResponse, sequence: UInt64)]) async {
        do {
            try await store.cacheResponses(batch.map(\.entry), limit: limit)
        } catch {
            logger.error("Status response cache write failed", metadata: ["error": "\(error)", "entries": "\(batch.count)"])
        }
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            for (entry, sequence) in batch where s.pending[entry.messageId]?.sequence == sequence {
                s.pending[entry.messageId] = nil
            }
            defer { s.full = [] }
            return s.full
        }
        for request in waiting { request.resume() }
    }
}
