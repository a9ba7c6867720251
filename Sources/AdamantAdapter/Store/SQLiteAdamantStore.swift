import Foundation
import GRDB
package import HeraldCore
import HeraldSQLite

/// The default ADAMANT store: one SQLite file (WAL, `synchronous=FULL`), for one instance.
package final class SQLiteAdamantStore: AdamantStore {
    let pool: DatabasePool

    /// `cacheKiB`: each connection's page cache (`sqlite_cache_kib`).
    /// The rows' times (docs/architecture.md, "Time").
    let clock: any HeraldClock

    package init(path: String, cacheKiB: Int = DurableSQLite.defaultCacheKiB, clock: any HeraldClock) throws {
        self.clock = clock
        pool = try DurableSQLite.open(path: path, cacheKiB: cacheKiB)
    }

    package func migrate() async throws {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE adamant_devices (
                        address TEXT NOT NULL, token TEXT NOT NULL, provider TEXT NOT NULL, updated_at REAL NOT NULL,
                        PRIMARY KEY (address, token));
                    CREATE INDEX adamant_devices_token ON adamant_devices (token);
                    CREATE TABLE adamant_cursors (worker TEXT PRIMARY KEY, height INTEGER NOT NULL, updated_at REAL NOT NULL);
                    CREATE TABLE adamant_pushed (key TEXT PRIMARY KEY, seq INTEGER NOT NULL);
                    CREATE INDEX adamant_pushed_seq ON adamant_pushed (seq);
                    """)
        }
        try migrator.migrate(pool)
    }

    package func cursor(_ worker: String) async throws -> Int64? {
        try await pool.read { db in try Int64.fetchOne(db, sql: "SELECT height FROM adamant_cursors WHERE worker = ?", arguments: [worker])
        }
    }

    private static func setCursor(_ db: Database, _ worker: String, _ cursor: Int64, at now: Date) throws {
        try db.execute(
            sql: """
                INSERT INTO adamant_cursors (worker, height, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (worker) DO UPDATE SET height = excluded.height, updated_at = excluded.updated_at
                """, arguments: [worker, cursor, now.timeIntervalSince1970])
    }

    package func apply(_ changes: [DeviceChange], worker: String, cursor: Int64) async throws {
        let now = clock.date
        try await pool.write { db in
            for change in changes {
                switch change.action {
                case .add(let provider):
                    try db.execute(
                        sql: """
                            INSERT INTO adamant_devices (address, token, provider, updated_at) VALUES (?, ?, ?, ?)
                            ON CONFLICT (address, token) DO UPDATE SET provider = excluded.provider, updated_at = excluded.updated_at
                            """, arguments: [change.address, change.token, provider.rawValue, now.timeIntervalSince1970])
                case .remove:
                    try db.execute(
                        sql: "DELETE FROM adamant_devices WHERE address = ? AND token = ?", arguments: [change.address, change.token])
                }
            }
            try Self.setCursor(db, worker, cursor, at: now)
        }
    }

    package func devices(addresses: [String]) async throws -> [RegisteredDevice] {
        guard !addresses.isEmpty else { return [] }
        return try await pool.read { db in
            var result: [RegisteredDevice] = []
            for chunk in stride(from: 0, to: addresses.count, by: 500) {
                let slice = Array(addresses[chunk..<min(chunk + 500, addresses.count)])
                let marks = Array(repeating: "?", count: slice.count).joined(separator: ", ")
                let rows = try Row.fetchAll(
                    db, sql: "SELECT address, token, provider FROM adamant_devices WHERE address IN (\(marks)) ORDER BY address, token",
                    arguments: StatementArguments(slice))
                for row in rows {
                    guard let provider = AdamantProvider(rawValue: row["provider"]) else { continue }
                    result.append(RegisteredDevice(address: row["address"], token: row["token"], provider: provider))
                }
            }
            return result
        }
    }

    package func remove(token: String, provider: AdamantProvider) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM adamant_devices WHERE token = ? AND provider = ?", arguments: [token, provider.rawValue])
            return db.changesCount
        }
    }

    package func pushed(among keys: [String]) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        return try await pool.read { db in
            var found: Set<String> = []
            for chunk in stride(from: 0, to: keys.count, by: 500) {
                let slice = Array(keys[chunk..<min(chunk + 500, keys.count)])
                let marks = Array(repeating: "?", count: slice.count).joined(separator: ", ")
                found.formUnion(
                    try String.fetchAll(
                        db, sql: "SELECT key FROM adamant_pushed WHERE key IN (\(marks))", arguments: StatementArguments(slice)))
            }
            return found
        }
    }

    package func markPushed(_ keys: [String]) async throws {
        guard !keys.isEmpty else { return }
        try await pool.write { db in
            var seq = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM adamant_pushed") ?? 0
            for key in keys {
                seq += 1
                try db.execute(sql: "INSERT OR IGNORE INTO adamant_pushed (key, seq) VALUES (?, ?)", arguments: [key, seq])
            }
        }
    }

    package func commit(pushed keys: [String], worker: String, cursor: Int64, keep: Int) async throws {
        let now = clock.date
        try await pool.write { db in
            var seq = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM adamant_pushed") ?? 0
            for key in keys {
                seq += 1
                try db.execute(sql: "INSERT OR IGNORE INTO adamant_pushed (key, seq) VALUES (?, ?)", arguments: [key, seq])
            }
            if !keys.isEmpty { try db.execute(sql: "DELETE FROM adamant_pushed WHERE seq <= ?", arguments: [seq - Int64(keep)]) }
            try Self.setCursor(db, worker, cursor, at: now)
        }
    }

    package func close() async { await DurableSQLite.close(pool) }
}
