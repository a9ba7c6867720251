import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import Logging
import Pushkins
import ServiceLifecycle
import Synchronization
import Testing

@testable import StatusAdapter

/// Push requests' answers are written behind the answer (docs/status-protocol.md): found at once,
/// stored in batches by one writer, bounded, and stored on stop.
@Suite struct ResponseCacheTests {
    struct Failed: Error {}

    /// A SQLite store whose response-cache writes are recorded, the first held until `release`
    /// opens, and failed while `failing` is set.
    final class RecordingStore: StatusStore {
        let inner: SQLiteStatusStore
        let batches = Mutex<[[[UInt8]]]>([])
        let release = ReadinessGate<Void>()
        let failing = Mutex(false)
        /// The store's lookups of cached responses.
        let lookups = Mutex(0)
        /// Whether other instances write it too (then it does not list its ids).
        let shared: Bool
        /// Whether listing its ids fails.
        let idsFail: Bool

        init(shared: Bool = false, idsFail: Bool = false) async throws {
            self.shared = shared
            self.idsFail = idsFail
            inner = try SQLiteStatusStore(path: temporaryPath("status.sqlite"), clock: SystemClock())
            try await inner.migrate()
        }

        func cacheResponses(_ entries: [CachedResponse], limit: Int) async throws {
            let first = batches.withLock { batches in
                batches.append(entries.map(\.messageId))
                return batches.count == 1
            }
            if first { try await release.wait() }
            if failing.withLock({ $0 }) { throw Failed() }
            try await inner.cacheResponses(entries, limit: limit)
        }

        func cachedResponse(messageId: [UInt8], now: Date) async throws -> [UInt8]? {
            lookups.withLock { $0 += 1 }
            return try await inner.cachedResponse(messageId: messageId, now: now)
        }
        func cachedMessageIds(now: Date, digest: @Sendable (UnsafeRawBufferPointer) -> UInt64) async throws -> [UInt64]? {
            if idsFail { throw Failed() }
            return shared ? nil : try await inner.cachedMessageIds(now: now, digest: digest)
        }
        func migrate() async throws {}
        func identity(orCreate candidate: [UInt8]) async throws -> [UInt8] { candidate }
        func registration(publicKey: [UInt8], installationId: String) async throws -> StoredRegistration? { nil }
        func registrations(publicKeys: [[UInt8]]) async throws -> [StoredRegistration] { [] }
        func write(_ row: StoredRegistration) async throws -> Bool { true }
        func dropRegistration(publicKey: [UInt8], installationId: String, version: UInt64) async throws {}
        func enqueueGorush(_ bodies: [[UInt8]], maxJobs: Int, maxBytes: Int) async throws -> Bool { true }
        func claimGorush(limit: Int, now: Date, until: Date) async throws -> [QueuedGorushJob] { [] }
        func completeGorush(id: Int64) async throws {}
        func recoverGorushClaims() async throws {}
        func gorushQueueDepth() async throws -> (jobs: Int, bytes: Int) { (0, 0) }
        func close() async { await inner.close() }
    }

    static func cache(_ store: RecordingStore, maxPending: Int = 1000) -> ResponseCache {
        var logger = Logger(label: "response-cache-test")
        logger.logLevel = .critical
        return ResponseCache(store: store, limit: 1000, maxPending: maxPending, logger: logger, clock: SystemClock())
    }

    static let later = Date().addingTimeInterval(600)

    /// Waits until `condition` holds (at most 60 s).
    static func until(_ condition: () -> Bool) async throws {
        #expect(await eventually { condition() })
    }

    @Test func answersAreFoundAtOnceAndWrittenInBatchesWhileTheWriterIsBusy() async throws {
        let store = try await RecordingStore()
        let cache = Self.cache(store)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await cache.run() }
            await cache.remember([1], response: [10], expires: Self.later)
            try await Self.until { store.batches.withLock { $0.count } == 1 }  // the writer holds [1]
            for n in 2...50 { await cache.remember([UInt8(n)], response: [UInt8(n), 0], expires: Self.later) }
            // Every answer is found although none is in the store yet, and no one waited for a write.
            #expect(try await cache.response(to: [1], now: Date()) == [10])
            #expect(try await cache.response(to: [50], now: Date()) == [50, 0])
            #expect(try await store.cachedResponse(messageId: [50], now: Date()) == nil)
            store.release.open(())
            try await Self.until { cache.pendingCount == 0 }
            group.cancelAll()
        }
        // The 49 answered during the first write went together in the next one.
        #expect(store.batches.withLock { $0 } == [[[1]], (2...50).map { [UInt8($0)] }])
        #expect(try await store.cachedResponse(messageId: [50], now: Date()) == [50, 0])
        #expect(try await cache.response(to: [1], now: Date()) == [10])
        #expect(try await cache.response(to: [1], now: Self.later.addingTimeInterval(1)) == nil)  // expired
    }

    @Test func aRequestWaitsWhenMaxPendingAnswersAreUnwritten() async throws {
        let store = try await RecordingStore()
        let cache = Self.cache(store, maxPending: 3)
        let third = ReadinessGate<Void>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await cache.run() }
            await cache.remember([1], response: [1], expires: Self.later)
            try await Self.until { store.batches.withLock { $0.count } == 1 }
            await cache.remember([2], response: [2], expires: Self.later)
            await cache.remember([3], response: [3], expires: Self.later)
            group.addTask {
                await cache.remember([4], response: [4], expires: Self.later)
                third.open(())
            }
            #expect(await eventually { cache.waitingForRoom == 1 })
            #expect(third.value == nil)  // three unwritten: the fourth waits
            #expect(try await cache.response(to: [4], now: Date()) == nil)
            store.release.open(())
            try await third.wait()
            try await Self.until { cache.pendingCount == 0 }
            group.cancelAll()
        }
        for n: UInt8 in 1...4 { #expect(try await store.cachedResponse(messageId: [n], now: Date()) == [n]) }
    }

    /// docs/architecture.md, "Time": the writer's batch window is measured on its clock. With a
    /// manual clock, every answer given while the writer waits in the window goes in one batch.
    @Test func answersGivenDuringTheBatchWindowAreWrittenTogether() async throws {
        let store = try await RecordingStore()
        store.release.open(())
        let clock = ManualClock()
        var logger = Logger(label: "response-cache-test")
        logger.logLevel = .critical
        let cache = ResponseCache(store: store, limit: 1000, maxPending: 100, logger: logger, clock: clock)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await cache.run() }
            await cache.remember([1], response: [1], expires: Self.later)
            #expect(await eventually { clock.sleepers == 1 })  // the writer waits in the window
            await cache.remember([2], response: [2], expires: Self.later)
            await cache.remember([3], response: [3], expires: Self.later)
            #expect(store.batches.withLock { $0.isEmpty })
            clock.advance(by: ResponseCache.batchWindow)
            #expect(await eventually { cache.pendingCount == 0 })
            group.cancelAll()
        }
        #expect(store.batches.withLock { $0 } == [[[1], [2], [3]]])
    }

    @Test func aFailedWriteForgetsItsAnswersSoTheirDuplicatesAreProcessedAgain() async throws {
        let store = try await RecordingStore()
        store.failing.withLock { $0 = true }
        store.release.open(())
        let cache = Self.cache(store)
        await cache.remember([7], response: [7], expires: Self.later)
        await cache.flush()
        #expect(cache.pendingCount == 0)
        #expect(try await cache.response(to: [7], now: Date()) == nil)
        store.failing.withLock { $0 = false }
        await cache.remember([8], response: [8], expires: Self.later)
        await cache.flush()
        #expect(try await store.cachedResponse(messageId: [8], now: Date()) == [8])
    }

    /// The writer as the Status service runs it: a service of the gateway's group.
    struct Writer: Service {
        let cache: ResponseCache
        func run() async throws { await cache.run() }
    }

    /// A group running only the cache's writer, as the gateway's does.
    static func writerGroup(_ cache: ResponseCache) -> ServiceGroup {
        var logger = Logger(label: "response-cache-test")
        logger.logLevel = .critical
        return ServiceGroup(configuration: .init(services: [Writer(cache: cache)], logger: logger))
    }

    @Test func whatIsLeftIsWrittenOnGracefulShutdown() async throws {
        let store = try await RecordingStore()
        let cache = Self.cache(store)
        let group = Self.writerGroup(cache)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await cache.remember([1], response: [1], expires: Self.later)
            try await Self.until { store.batches.withLock { $0.count } == 1 }
            for n: UInt8 in 2...9 { await cache.remember([n], response: [n], expires: Self.later) }
            await group.triggerGracefulShutdown()  // while [1] is being written and eight more wait
            #expect(await eventually { cache.isStopping })
            store.release.open(())
            try await tasks.waitForAll()
        }
        #expect(cache.pendingCount == 0)
        for n: UInt8 in 1...9 { #expect(try await store.cachedResponse(messageId: [n], now: Date()) == [n]) }
    }

    /// A request that outlived the shutdown's drain answers after the writer has ended: its
    /// answer is still stored, so that its sender's retry after a restart is not processed twice.
    @Test func anAnswerRememberedAfterTheWriterEndedIsStored() async throws {
        let store = try await RecordingStore()
        store.release.open(())
        let cache = Self.cache(store)
        let group = Self.writerGroup(cache)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await cache.remember([1], response: [1], expires: Self.later)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await cache.remember([2], response: [2], expires: Self.later)
        #expect(try await store.cachedResponse(messageId: [1], now: Date()) == [1])
        #expect(try await store.cachedResponse(messageId: [2], now: Date()) == [2])
        #expect(cache.pendingCount == 0)
    }

    @Test func onceTheStoredIdsAreLoadedANewIdIsAnsweredWithoutAskingTheStore() async throws {
        let store = try await RecordingStore()
        store.release.open(())
        try await store.inner.cacheResponses(
            [
                CachedResponse(messageId: [1], response: [10], expires: Self.later),
                CachedResponse(messageId: [2], response: [20], expires: Self.later),
            ],
            limit: 1000)
        let cache = Self.cache(store)
        // Before the ids are loaded, every lookup asks the store.
        #expect(try await cache.response(to: [99], now: Date()) == nil)
        #expect(store.lookups.withLock { $0 } == 1)
        await cache.remember([3], response: [30], expires: Self.later)
        await cache.loadStoredIDs()
        // An id the store held before, and one remembered while the ids loaded: looked up there.
        #expect(try await cache.response(to: [1], now: Date()) == [10])
        await cache.flush()
        #expect(try await cache.response(to: [3], now: Date()) == [30])
        #expect(store.lookups.withLock { $0 } == 3)
        // New ids are answered as new without a read.
        for n: UInt8 in 100...199 { #expect(try await cache.response(to: [n, 7], now: Date()) == nil) }
        #expect(store.lookups.withLock { $0 } == 3)
        // One remembered now is found in memory, then in the store once written.
        await cache.remember([4], response: [40], expires: Self.later)
        #expect(try await cache.response(to: [4], now: Date()) == [40])
        await cache.flush()
        #expect(try await cache.response(to: [4], now: Date()) == [40])
        #expect(store.lookups.withLock { $0 } == 4)
    }

    @Test func aStoreOtherInstancesWriteIsAlwaysAsked() async throws {
        let store = try await RecordingStore(shared: true)
        let cache = Self.cache(store)
        await cache.loadStoredIDs()
        // Another instance's answer, which this one never saw: found.
        try await store.inner.cacheResponse(messageId: [5], response: [50], expires: Self.later, limit: 1000)
        #expect(try await cache.response(to: [5], now: Date()) == [50])
        #expect(try await cache.response(to: [6], now: Date()) == nil)
        #expect(store.lookups.withLock { $0 } == 2)
    }

    @Test func idsThatCannotBeLoadedLeaveEveryLookupToTheStore() async throws {
        let store = try await RecordingStore(idsFail: true)
        store.release.open(())
        try await store.inner.cacheResponse(messageId: [5], response: [50], expires: Self.later, limit: 1000)
        let cache = Self.cache(store)
        await cache.loadStoredIDs()
        // The stored answer is still found, and a new id is looked up rather than assumed new.
        #expect(try await cache.response(to: [5], now: Date()) == [50])
        #expect(try await cache.response(to: [6], now: Date()) == nil)
        #expect(store.lookups.withLock { $0 } == 2)
    }
}

/// The filter that spares the response cache a read for a new id.
@Suite struct RecentIDFilterTests {
    static func id(_ n: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(n).bigEndian) { Array($0) } }

    @Test func everyRecentIdIsFoundAndFewUnseenOnesAre() {
        var filter = RecentIDFilter(generation: 10_000)
        for n in 0..<25_000 { filter.insert(Self.id(n)) }
        // Generations of 10 000: 20 000..<25 000 fill the current one, 10 000..<20 000 the older
        // one. Every one of them is found.
        #expect((10_000..<25_000).allSatisfy { filter.mayContain(Self.id($0)) })
        // About 0.7 % of the unseen ids per generation; the bound leaves room for chance.
        let falsePositives = (1_000_000..<1_020_000).filter { filter.mayContain(Self.id($0)) }.count
        #expect(falsePositives < 20_000 * 3 / 100)
        // The first generation's are forgotten (but for false positives).
        let remembered = (0..<10_000).filter { filter.mayContain(Self.id($0)) }.count
        #expect(remembered < 10_000 * 3 / 100)
    }

    @Test func aSmallGenerationIsRaisedToTheMinimum() {
        var filter = RecentIDFilter(generation: 0)
        #expect(filter.generation == 1024)
        for n in 0..<1024 { filter.insert(Self.id(n)) }
        #expect((0..<1024).allSatisfy { filter.mayContain(Self.id($0)) })
    }
}
