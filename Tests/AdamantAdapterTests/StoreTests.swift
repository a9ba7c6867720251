import Foundation
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
            let store = try SQLiteAdamantStore(path: ScratchDirectory.make("adamant") + "/a.sqlite")
            try await store.migrate()
            try await body(store)
            await store.close()
            return
        }
        let url = try #require(Self.postgresURL)
        var logger = Logger(label: "adamant-store-test")
        logger.logLevel = .critical
        _ = url
        let store = try PostgresAdamantStore(url: try await TestPostgres.createDatabase(prefix: "adamant"), logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in store.services { group.addTask { try await service.run() } }
            try await store.migrate()
            try await body(store)
            group.cancelAll()
        }
    }

    @Test func theSQLiteStoreSyncsEveryCommit() async throws {
        let store = try SQLiteAdamantStore(path: ScratchDirectory.make("adamant") + "/a.sqlite")
        try await store.migrate()
        // FULL, although GRDB's pool sets NORMAL when it turns WAL on.
        #expect(try await DurableSQLite.synchronousSetting(of: store.pool) == 2)
        await store.close()
    }

    @Test func theSQLiteStoreKeepsTheConfiguredPageCache() async throws {
        let store = try SQLiteAdamantStore(path: ScratchDirectory.make("adamant") + "/a.sqlite", cacheKiB: 32)
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
