import Foundation
import GRDB
import HeraldCore
import HeraldPostgres
import HeraldSQLite
import HeraldTestSupport
import HeraldUpstream
import Logging
import PostgresNIO
import Pushkins
import Testing

@testable import StatusAdapter

/// The same tests against SQLite and, when `HERALD_TEST_POSTGRES_URL` names a server (as
/// `scripts/test.sh` and CI arrange), PostgreSQL, each in a database of its own.
@Suite struct StoreTests {
    static let postgresURL = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static var backends: [String] { ["sqlite"] + (postgresURL == nil ? [] : ["postgres"]) }

    static func makeStore(_ backend: String) async throws -> any StatusStore {
        var logger = Logger(label: "store-test")
        logger.logLevel = .critical
        if backend == "sqlite" {
            return try SQLiteStatusStore(path: temporaryPath("status.sqlite"), clock: SystemClock())
        }
        guard let base = postgresURL, var components = URLComponents(string: base) else { throw StoreTestError.noPostgres }
        let name = "herald_test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))"
        try await createDatabase(name, url: base, logger: logger)
        components.path = "/" + name
        return try TestPostgresStore(url: components.string ?? base, logger: logger)
    }

    static func createDatabase(_ name: String, url: String, logger: Logger) async throws {
        let components = URLComponents(string: url)
        let configuration = PostgresClient.Configuration(
            host: components?.host ?? "127.0.0.1", port: components?.port ?? 5432, username: components?.user ?? "postgres",
            password: components?.password, database: "postgres", tls: .disable)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
            group.cancelAll()
        }
    }

    enum StoreTestError: Error { case noPostgres }

    func row(_ version: UInt64, _ blob: [UInt8]? = [1, 2, 3], key: [UInt8] = [7, 7], installation: String = "i1") -> StoredRegistration {
        StoredRegistration(publicKey: key, installationId: installation, version: version, registration: blob)
    }

    @Test(arguments: backends)
    func versionsOnlyMoveForward(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        try await store.migrate()  // idempotent
        #expect(try await store.registration(publicKey: [7, 7], installationId: "i1") == nil)
        #expect(try await store.write(row(2)))
        #expect(try await store.write(row(2, [9])) == false)
        #expect(try await store.write(row(1, [9])) == false)
        #expect(try await store.registration(publicKey: [7, 7], installationId: "i1") == row(2))
        #expect(try await store.write(row(3, nil)))  // unregister keeps the version
        #expect(try await store.registration(publicKey: [7, 7], installationId: "i1") == row(3, nil))
        #expect(try await store.registrations(publicKeys: [[7, 7]]).isEmpty)
        await store.close()
    }

    @Test(arguments: backends)
    func queriesReturnRegisteredRowsOfTheGivenKeys(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        _ = try await store.write(row(1, key: [1], installation: "a"))
        _ = try await store.write(row(1, key: [1], installation: "b"))
        _ = try await store.write(row(1, key: [2], installation: "a"))
        _ = try await store.write(row(1, nil, key: [3], installation: "a"))
        let found = try await store.registrations(publicKeys: [[1], [3], [4]])
        #expect(found.map(\.installationId) == ["a", "b"])
        #expect(try await store.registrations(publicKeys: []).isEmpty)
        await store.close()
    }

    @Test(arguments: backends)
    func droppingARejectedTokenLeavesANewerRegistrationAlone(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        _ = try await store.write(row(1))
        _ = try await store.write(row(2, [5]))
        try await store.dropRegistration(publicKey: [7, 7], installationId: "i1", version: 1)
        #expect(try await store.registration(publicKey: [7, 7], installationId: "i1") == row(2, [5]))
        try await store.dropRegistration(publicKey: [7, 7], installationId: "i1", version: 2)
        #expect(try await store.registration(publicKey: [7, 7], installationId: "i1") == row(2, nil))
        await store.close()
    }

    @Test(arguments: backends)
    func theIdentityIsCreatedOnceAndSharedByEveryInstance(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        let first = try await store.identity(orCreate: [1, 2, 3])
        let second = try await store.identity(orCreate: [4, 5, 6])
        #expect(first == [1, 2, 3])
        #expect(second == [1, 2, 3])
        await store.close()
    }

    @Test(arguments: backends)
    func concurrentReRegistrationsKeepTheNewestVersion(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for version in (1...40).shuffled() {
                group.addTask { try await store.write(self.row(UInt64(version), [UInt8(version)])) }
            }
            var accepted = 0
            for try await ok in group where ok { accepted += 1 }
            return accepted
        }
        #expect(results >= 1)
        #expect(try await store.registration(publicKey: [7, 7], installationId: "i1") == row(40, [40]))
        await store.close()
    }

    @Test(arguments: backends)
    func responsesAreCachedForTheirLifetimeAndBounded(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        let now = Date()
        try await store.cacheResponse(messageId: [1], response: [9, 9], expires: now.addingTimeInterval(60), limit: 2)
        #expect(try await store.cachedResponse(messageId: [1], now: now) == [9, 9])
        #expect(try await store.cachedResponse(messageId: [1], now: now.addingTimeInterval(61)) == nil)
        try await store.cacheResponse(messageId: [2], response: [2], expires: now.addingTimeInterval(70), limit: 2)
        try await store.cacheResponse(messageId: [3], response: [3], expires: now.addingTimeInterval(80), limit: 2)
        // Pruning runs every `pruneEvery` inserts: fill up to the next pruning insert.
        for n in 4...(StatusStoreMaintenance.pruneEvery + 1) {
            try await store.cacheResponse(messageId: [UInt8(n % 256), 1], response: [1], expires: now.addingTimeInterval(50), limit: 2)
        }
        #expect(try await store.cachedResponse(messageId: [1], now: now) == nil)  // over the limit: the oldest went
        #expect(try await store.cachedResponse(messageId: [3], now: now) == [3])
        #expect(try await store.cachedResponse(messageId: [2], now: now) == [2])
        await store.close()
    }

    /// A batch is written whole, and an id that comes twice in it keeps its last answer, as if the
    /// entries had been written one by one (PostgreSQL writes a batch in one statement).
    @Test(arguments: backends)
    func aBatchKeepsTheLastAnswerOfAnIdItHoldsTwice(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        let now = Date()
        let later = now.addingTimeInterval(60)
        try await store.cacheResponses(
            [
                CachedResponse(messageId: [1], response: [1, 1], expires: later),
                CachedResponse(messageId: [2], response: [2], expires: later),
                CachedResponse(messageId: [1], response: [1, 2], expires: later),
                CachedResponse(messageId: [3], response: [], expires: later),
            ], limit: 100)
        #expect(try await store.cachedResponse(messageId: [1], now: now) == [1, 2])
        #expect(try await store.cachedResponse(messageId: [2], now: now) == [2])
        #expect(try await store.cachedResponse(messageId: [3], now: now) == [])
        // An id already stored is answered anew by a later batch.
        try await store.cacheResponses([CachedResponse(messageId: [2], response: [2, 2], expires: later)], limit: 100)
        #expect(try await store.cachedResponse(messageId: [2], now: now) == [2, 2])
        await store.close()
    }

    @Test func onlyTheLastEntryOfEachIdIsKeptInOrder() {
        let later = Date()
        let entries = [[1], [2], [1], [3], [2]].enumerated().map { n, id in
            CachedResponse(messageId: id, response: [UInt8(n)], expires: later)
        }
        #expect(CachedResponse.lastOfEachId(entries).map(\.response) == [[2], [3], [4]])
        #expect(CachedResponse.lastOfEachId(Array(entries[0..<2])) == Array(entries[0..<2]))
    }

    /// Over its limit, the SQLite cache is cut to nine tenths of it, keeping the answers that expire
    /// last, and is not walked again until the limit is reached again.
    @Test func theSQLiteCacheIsCutToNineTenthsOfItsLimit() async throws {
        let store = try SQLiteStatusStore(path: temporaryPath("status.sqlite"), clock: SystemClock())
        try await store.migrate()
        let now = Date()
        let entries: [CachedResponse] = (1...300).map { (n: Int) -> CachedResponse in
            let id: [UInt8] = [UInt8(n / 256), UInt8(n % 256)]
            return CachedResponse(messageId: id, response: [1], expires: now.addingTimeInterval(Double(1000 + n)))
        }
        // The first insert prunes (nothing to cut), then insert 257 does: 257 rows, over the limit of 100.
        try await store.cacheResponses(Array(entries[0..<1]), limit: 100)
        try await store.cacheResponses(Array(entries[1..<257]), limit: 100)
        let count: @Sendable () async throws -> Int = {
            try await store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM status_responses") ?? -1 }
        }
        #expect(try await count() == 90)
        #expect(try await store.cachedResponse(messageId: [1, 1], now: now) == [1])  // 257, the last to expire
        #expect(try await store.cachedResponse(messageId: [0, 168], now: now) == [1])  // 168, the 90th from the last
        #expect(try await store.cachedResponse(messageId: [0, 167], now: now) == nil)
        try await store.cacheResponses(Array(entries[257...]), limit: 100)
        #expect(try await count() == 133)  // no pruning insert among these
        await store.close()
    }

    /// The span of the cache's rowids, read every 256 answers cached, is found at the two ends of the
    /// table: no scan of the cache. The count must still be right with a gap in the rowids.
    @Test func theCachesRowidSpanIsReadWithoutAScan() async throws {
        let store = try SQLiteStatusStore(path: temporaryPath("status.sqlite"), clock: SystemClock())
        try await store.migrate()
        let later = Date().addingTimeInterval(1000)
        try await store.cacheResponses((1...5).map { CachedResponse(messageId: [UInt8($0)], response: [1], expires: later) }, limit: 100)
        try await store.pool.write { db in try db.execute(sql: "DELETE FROM status_responses WHERE message_id = x'03'") }
        let (plan, span) = try await store.pool.read { db in
            (
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLiteStatusStore.rowidSpanSQL).map { $0["detail"] as String? ?? "" },
                try Int.fetchOne(db, sql: SQLiteStatusStore.rowidSpanSQL)
            )
        }
        await store.close()
        #expect(span == 5)
        #expect(!plan.isEmpty)
        #expect(plan.allSatisfy { !$0.hasPrefix("SCAN status_responses") }, "\(plan)")
    }

    /// The lookups every push request makes run on read connections of their own: each sees every
    /// commit made before it, under concurrent lookups and writes.
    @Test func sqliteLookupsSeeEachCommitWhileOthersLookUpAndWrite() async throws {
        let store = try SQLiteStatusStore(path: temporaryPath("status.sqlite"), clock: SystemClock())
        try await store.migrate()
        #expect(try await store.write(row(1, [1])))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var seen: UInt64 = 0
                    for _ in 0..<300 {
                        let found = try #require(try await store.registration(publicKey: [7, 7], installationId: "i1"))
                        #expect(found.version >= seen)  // never an older snapshot than one seen before
                        #expect(found.registration == [UInt8(truncatingIfNeeded: found.version)])
                        seen = found.version
                    }
                }
            }
            for version: UInt64 in 2...100 {
                #expect(try await store.write(row(version, [UInt8(version)])))
                #expect(try await store.registration(publicKey: [7, 7], installationId: "i1") == row(version, [UInt8(version)]))
            }
            try await group.waitForAll()
        }
        try await store.cacheResponse(messageId: [4], response: [], expires: Date().addingTimeInterval(60), limit: 10)
        #expect(try await store.cachedResponse(messageId: [4], now: Date()) == [])  // empty, not missing
        await store.close()
    }

    @Test func aFailedLookupIsAnErrorNotACrash() throws {
        let missing = SQLitePointReads(path: temporaryPath("missing.sqlite"))
        #expect {
            _ = try missing.first("SELECT 1", []) { $0.integer(0) }
        } throws: { error in
            (error as? SQLitePointReads.Failure)?.message.contains("unable to open") == true
        }
        let path = temporaryPath("empty.sqlite")
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let lookups = SQLitePointReads(path: path)
        #expect {
            _ = try lookups.first("SELECT version FROM status_registrations WHERE public_key = ?", [.blob([1])]) { $0.integer(0) }
        } throws: { error in
            (error as? SQLitePointReads.Failure)?.message.contains("no such table") == true
        }
    }

    /// A statement stepped in place stores what GRDB's `execute(arguments:)` stores, fails with
    /// SQLite's own error, and is ready for the next row after a failure.
    @Test func aStatementSteppedInPlaceStoresAndFailsAsGRDBs() async throws {
        let queue = try DatabaseQueue(path: temporaryPath("in-place.sqlite"))
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (k BLOB PRIMARY KEY, v BLOB, x REAL NOT NULL)")
            let insert = try db.cachedStatement(sql: "INSERT INTO t (k, v, x) VALUES (?, ?, ?)")
            try insert.stepInPlace(in: db) { parameters in
                parameters.blob([1, 2])
                parameters.blob([0, 255, 0])
                parameters.real(1.5)
            }
            try db.execute(sql: "INSERT INTO t (k, v, x) VALUES (?, ?, ?)", arguments: [Data([3]), Data([0, 255, 0]), 1.5])
            // The same key again: SQLite's constraint error, and nothing stored.
            #expect {
                try insert.stepInPlace(in: db) { parameters in
                    parameters.blob([1, 2])
                    parameters.blob([7])
                    parameters.real(2)
                }
            } throws: { error in
                (error as? DatabaseError)?.resultCode == .SQLITE_CONSTRAINT
            }
            try insert.stepInPlace(in: db) { parameters in
                parameters.blob([4])
                parameters.blob([])
                parameters.real(3)
            }
            try db.execute(sql: "INSERT INTO t (k, v, x) VALUES (?, ?, ?)", arguments: [Data([5]), Data(), 3])
        }
        let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT k, v, x FROM t ORDER BY k") }
        #expect(rows.map { $0[0] as Data } == [Data([1, 2]), Data([3]), Data([4]), Data([5])])
        #expect(rows[0][1] as Data? == rows[1][1] as Data?)
        #expect(rows[0][2] as Double == 1.5)
        // No bytes are stored as GRDB stores an empty `Data`.
        #expect(rows[2][1] as DatabaseValue == rows[3][1] as DatabaseValue)
    }

    /// `sqlite_cache_kib` bounds every connection's page cache: the pool's writer and readers and
    /// the point-read connections.
    @Test func everyConnectionKeepsTheConfiguredPageCache() async throws {
        let store = try SQLiteStatusStore(path: temporaryPath("status.sqlite"), cacheKiB: 64, clock: SystemClock())
        try await store.migrate()
        let pragma = "PRAGMA cache_size"
        #expect(try await store.pool.write { db in try Int.fetchOne(db, sql: pragma) } == -64)
        #expect(try await store.pool.read { db in try Int.fetchOne(db, sql: pragma) } == -64)
        #expect(try store.lookups.first(pragma, []) { $0.integer(0) } == -64)
        await store.close()

        let defaults = try SQLiteStatusStore(path: temporaryPath("status.sqlite"), clock: SystemClock())
        #expect(try await defaults.pool.read { db in try Int.fetchOne(db, sql: pragma) } == -DurableSQLite.defaultCacheKiB)
        #expect(try defaults.lookups.first(pragma, []) { $0.integer(0) } == Int64(-DurableSQLite.defaultCacheKiB))
        await defaults.close()
    }

    /// Closing a store's file holds no thread of Swift's cooperative pool: as many closes as that
    /// pool has threads, each begun while an asynchronous read holds a reader, all return once the
    /// read is over. When a close blocked its thread, the read could not resume to give its reader
    /// back, and every close waited for it (the suite hung there at full parallelism).
    @Test func closingWhileAReadHoldsAReaderLeavesTheCooperativePoolItsThreads() async throws {
        let pool = try DurableSQLite.open(path: temporaryPath("close.sqlite"))
        let closes = max(2, ProcessInfo.processInfo.activeProcessorCount)
        // Each close says it is about to begin; the read ends only once all have.
        let begun = DispatchSemaphore(value: 0)
        let (holding, reading) = AsyncStream.makeStream(of: Void.self)
        async let read = pool.read { _ in
            reading.yield()
            for _ in 0..<closes { begun.wait() }
            return "read"
        }
        for await _ in holding { break }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<closes {
                group.addTask {
                    begun.signal()
                    await DurableSQLite.close(pool)
                }
            }
        }
        #expect(try await read == "read")
        // Closed: a read now fails instead of opening the file again.
        await #expect(throws: DatabaseError.self) { try await pool.read { _ in 1 } }
    }

    @Test func theResponseCacheIsNotSyncedButRegistrationsStillAre() async throws {
        let store = try SQLiteStatusStore(path: temporaryPath("status.sqlite"), clock: SystemClock())
        try await store.migrate()
        // FULL, although GRDB's pool sets NORMAL when it turns WAL on.
        #expect(try await DurableSQLite.synchronousSetting(of: store.pool) == 2)
        try await store.cacheResponse(messageId: [1], response: [9], expires: Date().addingTimeInterval(60), limit: 10)
        // The cache's transaction ran with NORMAL; the writer is back to FULL for the next write.
        #expect(try await DurableSQLite.synchronousSetting(of: store.pool) == 2)
        #expect(try await store.write(row(1)))
        #expect(try await store.cachedResponse(messageId: [1], now: Date()) == [9])
        await store.close()
    }

    @Test(.enabled(if: postgresURL != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func twoPostgresInstancesActAsOneServer() async throws {
        let a = try await Self.makeStore("postgres")
        try await a.migrate()
        let url = try #require((a as? TestPostgresStore)?.url)
        let b = try TestPostgresStore(url: url, logger: Logger(label: "b"))
        try await b.migrate()
        #expect(try await a.identity(orCreate: [1]) == (try await b.identity(orCreate: [2])))
        #expect(try await a.write(row(5)))
        #expect(try await b.write(row(5, [8])) == false)
        #expect(try await b.write(row(6, [8])))
        #expect(try await a.registration(publicKey: [7, 7], installationId: "i1") == row(6, [8]))
        await a.close()
        await b.close()
    }
}

/// `sslmode` in a store's URL, against the throwaway PostgreSQL, which the test script starts with
/// TLS and a CA of its own (`HERALD_TEST_POSTGRES_CA`).
@Suite struct PostgresTLSTests {
    static let url = StoreTests.postgresURL
    static let ca = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_CA"].flatMap { $0.isEmpty ? nil : $0 }

    func with(_ query: String) -> String { (Self.url ?? "") + "?" + query }

    /// Whether the store's connections use TLS, as the server sees them.
    func usesTLS(_ url: String) async throws -> Bool {
        var logger = Logger(label: "tls-test")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: try PostgresURL.configuration(url), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                await client.run()
                return false
            }
            defer { group.cancelAll() }
            let rows = try await client.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: logger)
            for try await ssl in rows.decode(Bool.self) { return ssl }
            return false
        }
    }

    @Test(.enabled(if: url != nil && ca != nil, "needs HERALD_TEST_POSTGRES_URL and _CA"))
    func verifyFullChecksTheServerAgainstTheCAAndUsesTLS() async throws {
        let ca = try #require(Self.ca)
        let verified = with("sslmode=verify-full&sslrootcert=\(ca)")
        #expect(try await usesTLS(verified))
        #expect(try await usesTLS(with("sslmode=require")))
        #expect(try await !usesTLS(with("sslmode=disable")))
        let store = try TestPostgresStore(url: verified, logger: Logger(label: "tls"))
        try await store.migrate()
        await store.close()

        let otherCA = try TestPKI(directory: temporaryPath("pki").replacingOccurrences(of: "/pki", with: "")).caFile
        // The pool keeps retrying a connection whose certificate fails; five seconds without one is a failure too.
        let refused = with("sslmode=verify-full&sslrootcert=\(otherCA)")
        await #expect(throws: (any Error).self) { _ = try await withinDeadline(.seconds(5)) { try await self.usesTLS(refused) } }
    }

    @Test func aBadSslmodeOrCAFileIsAConfigError() {
        #expect(throws: PostgresURL.Invalid.self) { _ = try PostgresURL.configuration("postgres://h/d?sslmode=maybe") }
        #expect(throws: PostgresURL.Invalid.self) {
            _ = try PostgresURL.configuration("postgres://h/d?sslmode=verify-full&sslrootcert=/nonexistent.pem")
        }
        #expect(throws: PostgresURL.Invalid.self) { _ = try PostgresURL.configuration("mysql://h/d") }
        #expect(PostgresURL.redacted("postgres://u:secret@h/d").contains("secret") == false)
    }

    /// A CA file that can be read but holds no certificate: the store's configurations (its pool's
    /// and its probe's connection) are refused when the store is made, naming the URL without its
    /// password, not at its first connection.
    @Test func aCAFileWithoutACertificateIsRefusedWhenTheStoreIsMade() throws {
        let ca = temporaryPath("not-a-ca.pem")
        try "not a certificate\n".write(toFile: ca, atomically: true, encoding: .utf8)
        let url = "postgres://u:secret@h/d?sslmode=verify-full&sslrootcert=\(ca)"
        let error = #expect(throws: PostgresURL.Invalid.self) { _ = try PostgresURL.configurations(url) }
        #expect(
            error?.description.hasPrefix("TLS for 'postgres://u:***@h/d?sslmode=verify-full&sslrootcert=") == true,
            "\(String(describing: error))")
        #expect(error?.description.contains("secret") == false)
    }
}

/// gorush's durable queue, on both stores.
extension StoreTests {
    @Test(arguments: backends)
    func theGorushQueueIsBoundedInJobsAndBytesAllOrNone(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        #expect(try await store.enqueueGorush([[1, 2, 3], [4, 5]], maxJobs: 3, maxBytes: 10))
        #expect(try await store.enqueueGorush([[6], [7]], maxJobs: 3, maxBytes: 10) == false)  // 4 jobs > 3: none written
        #expect(try await store.enqueueGorush([[6, 7, 8, 9, 10, 11]], maxJobs: 3, maxBytes: 10) == false)  // 11 bytes > 10
        #expect(try await store.gorushQueueDepth() == (2, 5))
        #expect(try await store.enqueueGorush([[6, 7, 8, 9, 10]], maxJobs: 3, maxBytes: 10))
        #expect(try await store.gorushQueueDepth() == (3, 10))
        // With the depth just read (full), a further insert is refused at once, as on a count.
        #expect(try await store.enqueueGorush([[1]], maxJobs: 3, maxBytes: 10) == false)
        // Far below generous limits, inserts go in (on PostgreSQL without counting) and all are kept.
        #expect(try await store.gorushQueueDepth() == (3, 10))
        for n: UInt8 in 0..<5 { #expect(try await store.enqueueGorush([[n], [n]], maxJobs: 1000, maxBytes: 100_000)) }
        #expect(try await store.gorushQueueDepth() == (13, 20))
        await store.close()
    }

    @Test(arguments: backends)
    func gorushJobsAreClaimedOldestFirstOnceAndAgainOnlyWhenTheClaimRunsOut(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        _ = try await store.enqueueGorush([[1], [2], [3]], maxJobs: 10, maxBytes: 100)
        let now = Date()
        let first = try await store.claimGorush(limit: 2, now: now, until: now + 60)
        #expect(first.map(\.body) == [[1], [2]])
        let second = try await store.claimGorush(limit: 5, now: now, until: now + 60)
        #expect(second.map(\.body) == [[3]])  // claimed jobs are not handed out twice
        #expect(try await store.claimGorush(limit: 5, now: now, until: now + 60).isEmpty)
        try await store.completeGorush(id: first[0].id)
        // A worker that died: its claim runs out and the job is claimed again.
        let later = try await store.claimGorush(limit: 5, now: now + 61, until: now + 120)
        #expect(later.map(\.body) == [[2], [3]])
        #expect(try await store.gorushQueueDepth().jobs == 2)
        await store.close()
    }

    @Test func sqliteFreesEveryClaimAtStartUpForItIsUsedByOneInstance() async throws {
        let store = try await Self.makeStore("sqlite")
        try await store.migrate()
        _ = try await store.enqueueGorush([[1], [2]], maxJobs: 10, maxBytes: 100)
        let now = Date()
        #expect(try await store.claimGorush(limit: 5, now: now, until: now + 300).count == 2)
        try await store.recoverGorushClaims()
        #expect(try await store.claimGorush(limit: 5, now: now, until: now + 300).map(\.body) == [[1], [2]])
        await store.close()
    }

    @Test(arguments: backends)
    func concurrentClaimsNeverShareAJob(_ backend: String) async throws {
        let store = try await Self.makeStore(backend)
        try await store.migrate()
        _ = try await store.enqueueGorush((0..<60).map { [UInt8($0)] }, maxJobs: 100, maxBytes: 1000)
        let now = Date()
        let claimed = try await withThrowingTaskGroup(of: [QueuedGorushJob].self) { group in
            for _ in 0..<8 { group.addTask { try await store.claimGorush(limit: 10, now: now, until: now + 60) } }
            var all: [QueuedGorushJob] = []
            for try await jobs in group { all += jobs }
            return all
        }
        #expect(claimed.count == 60)
        #expect(Set(claimed.map(\.id)).count == 60)
        await store.close()
    }
}
