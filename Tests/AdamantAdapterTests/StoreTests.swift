import Foundation
import HeraldCore
import HeraldSQLite
import HeraldTestSupport
import Logging
import Testing

@testable import AdamantAdapter

/// The same tests against SQLite and, when `HERALD_TEST_POSTGRES_URL` names a server, PostgreSQL.
@Suite struct AdamantStoreTests {
    static let postgresURL = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static var backends: [String] { ["sqlite"] + (postgresURL == nil ? [] : ["postgres"]) }

    func withStore(_ backend: String, _ body: (any AdamantStore) async throws -> Void) async throws {
        if backend == "sqlite" {
            let store = try SQLiteAdamantStore(path: ScratchDirectory.make("adamant") + "/a.sqlite", clock: SystemClock())
            try await store.migrate()
            try await body(store)
            await store.close()
            return
        }
        let url = try #require(Self.postgresURL)
        var logger = Logger(label: "adamant-store-test")
        logger.logLevel = .critical
        _ = url
        // What is checked is the store's answers, not its timing: a loaded CI machine may take
        // longer than the production timeout (5 s) to answer while the rest of the suite runs.
        let store = try PostgresAdamantStore(
            url: try await TestPostgres.createDatabase(prefix: "adamant"), logger: logger, timeout: .seconds(60), clock: SystemClock())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in store.services { group.addTask { try await service.run() } }
            try await store.migrate()
            try await body(store)
            group.cancelAll()
        }
    }

    @Test func theSQLiteStoreSyncsEveryCommit() async throws {
        let store = try SQLiteAdamantStore(path: ScratchDirectory.make("adamant") + "/a.sqlite", clock: SystemClock())
        try await store.migrate()
        // FULL, although GRDB's pool sets NORMAL when it turns WAL on.
        #expect(try await DurableSQLite.synchronousSetting(of: store.pool) == 2)
        await store.close()
    }

    @Test func theSQLiteStoreKeepsTheConfiguredPageCache() async throws {
        let store = try SQLiteAdamantStore(path: ScratchDirectory.make("adamant") + "/a.sqlite", cacheKiB: 32, clock: SystemClock())
        try await store.migrate()
        #expect(try await store.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") } == -32)
        #expect(try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") } == -32)
        await store.close()
    }

    @Test(arguments: backends)
    func changesApplyInOrderAndTheLastOneWins(_ backend: String) async throws {
        try await withStore(backend) { store in
            #expect(try await store.cursor("signals") == nil)
            try await store.apply(
                [
                    DeviceChange(address: "U1", token: "aa", action: .add(.apns)),
                    DeviceChange(address: "U1", token: "aa", action: .remove),
                    DeviceChange(address: "U2", token: "bb", action: .remove),
                    DeviceChange(address: "U2", token: "bb", action: .add(.apns)),
                    DeviceChange(address: "U2", token: "bb", action: .add(.apnsSandbox)),
                    DeviceChange(address: "U3", token: "bb", action: .add(.apns)),
                ], worker: "signals", cursor: 12)
            #expect(try await store.cursor("signals") == 12)
            #expect(
                try await store.devices(addresses: ["U1", "U2", "U3"])
                    == [
                        RegisteredDevice(address: "U2", token: "bb", provider: .apnsSandbox),
                        RegisteredDevice(address: "U3", token: "bb", provider: .apns),
                    ])
            #expect(try await store.remove(token: "bb", provider: .apns) == 1)
            #expect(
                try await store.devices(addresses: ["U2", "U3"]) == [RegisteredDevice(address: "U2", token: "bb", provider: .apnsSandbox)])
        }
    }

    @Test(arguments: backends)
    func pushedKeysAreRememberedWithTheCursorAndBounded(_ backend: String) async throws {
        try await withStore(backend) { store in
            try await store.commit(pushed: ["t1:a", "t2:a"], worker: "chats", cursor: 5, keep: 3)
            #expect(try await store.pushed(among: ["t1:a", "t2:a", "t3:a"]) == ["t1:a", "t2:a"])
            #expect(try await store.cursor("chats") == 5)
            try await store.commit(pushed: ["t3:a", "t4:a"], worker: "chats", cursor: 7, keep: 3)
            #expect(try await store.pushed(among: ["t1:a", "t2:a", "t3:a", "t4:a"]) == ["t2:a", "t3:a", "t4:a"])  // the oldest went
            #expect(try await store.cursor("chats") == 7)
            #expect(try await store.cursor("transfers") == nil)
        }
    }
}

/// The polling lease on PostgreSQL when its holder's connection dies (docs/adamant.md, "Several
/// instances"): the holder's pollers are stopped, and a commit it makes after another instance took
/// the lease is refused, so one instance alone moves the cursors.
@Suite(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"), .timeLimit(.minutes(1)))
struct AdamantLeaseTests {
    /// Runs `body` with two stores on one new database, their connection pools running.
    func withTwoStores(leaseCheck: Duration, _ body: (PostgresAdamantStore, PostgresAdamantStore) async throws -> Void) async throws {
        var logger = Logger(label: "adamant-lease-test")
        logger.logLevel = .critical
        let url = try await TestPostgres.createDatabase(prefix: "adamant_lease")
        let a = try PostgresAdamantStore(url: url, logger: logger, leaseCheck: leaseCheck, clock: SystemClock())
        let b = try PostgresAdamantStore(url: url, logger: logger, leaseCheck: leaseCheck, clock: SystemClock())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in a.services + b.services { group.addTask { try await service.run() } }
            try await a.migrate()
            try await b.migrate()
            try await body(a, b)
            group.cancelAll()
        }
    }

    /// Ends the server process holding the polling lock: what a PostgreSQL crash does to the holder.
    func terminateLockHolder(_ store: PostgresAdamantStore) async throws -> Int {
        try await store.terminateLeaseConnections()
    }

    @Test func aHolderWhoseConnectionDiedCannotCommitAfterAnotherTookTheLease() async throws {
        // A watch far slower than the test: only the fence stands between the old holder and the cursor.
        try await withTwoStores(leaseCheck: .seconds(600)) { a, b in
            let leading = TestEvent()
            let release = TestEvent()
            let checked = TestEvent()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await a.whileLeader(retry: .milliseconds(50)) {
                        try await a.commit(pushed: ["t1:apns:aa"], worker: "chats", cursor: 10, keep: 100)
                        leading.raise()
                        await release.wait()
                        // After the hand-over: neither pushes nor a commit get through.
                        await #expect(throws: LeaseLost.self) { try await a.confirmLease() }
                        await #expect(throws: LeaseLost.self) {
                            try await a.commit(pushed: ["t2:apns:aa"], worker: "chats", cursor: 20, keep: 100)
                        }
                        checked.raise()
                    }
                }
                await leading.wait()
                let ended = try await terminateLockHolder(a)
                #expect(ended == 1)
                let tookOver = TestEvent()
                group.addTask {
                    try await b.whileLeader(retry: .milliseconds(50)) {
                        try await b.confirmLease()
                        try await b.commit(pushed: [], worker: "chats", cursor: 11, keep: 100)
                        tookOver.raise()
                        await release.wait()
                    }
                }
                await tookOver.wait()
                release.raise()
                await checked.wait()
                group.cancelAll()
            }
            #expect(try await b.cursor("chats") == 11)  // the old holder's commit of 20 was refused
            #expect(try await b.pushed(among: ["t1:apns:aa", "t2:apns:aa"]) == ["t1:apns:aa"])
        }
    }

    @Test func theHolderStopsItsPollersWhenItsConnectionDies() async throws {
        try await withTwoStores(leaseCheck: .milliseconds(500)) { a, b in
            let leading = TestEvent()
            let stopped = TestEvent()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await a.whileLeader(retry: .milliseconds(50)) {
                        leading.raise()
                        // A poller that would run for ever: only the lost lease ends it.
                        await TestEvent().wait()
                        #expect(Task.isCancelled)
                        stopped.raise()
                    }
                }
                await leading.wait()
                let ended = try await terminateLockHolder(a)
                #expect(ended == 1)
                await stopped.wait()
                group.cancelAll()
            }
            // The lock went with the connection: the other store takes it at once.
            let taken = TestEvent()
            try await b.whileLeader(retry: .milliseconds(50)) { taken.raise() }
            await taken.wait()
        }
    }
}
