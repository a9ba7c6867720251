package import Foundation
import GRDB
package import HeraldCore
import HeraldSQLite

/// The default store: one SQLite file in WAL mode. A write is acknowledged only once it is
/// committed with `synchronous=FULL`, so a registration the client was told about survives a
/// crash of the process or the machine.
///
/// Reads run on the calling thread: they are point lookups by primary key, shorter than the two
/// thread switches an asynchronous read costs. The two that every push request makes (its
/// registrations, and its answer if it may have one) go through `SQLitePointReads`, the others
/// through GRDB's synchronous read. Writes, which wait for `fsync`, stay asynchronous so they never
/// hold a thread of the cooperative pool.
package final class SQLiteStatusStore: StatusStore {
    let pool: DatabasePool
    let lookups: SQLitePointReads
    private let inserts = AtomicCounter()

    /// `cacheKiB`: each connection's page cache (`sqlite_cache_kib`).
    /// The rows' times (docs/architecture.md, "Time").
    let clock: any HeraldClock

    package init(path: String, cacheKiB: Int = DurableSQLite.defaultCacheKiB, clock: any HeraldClock) throws {
        self.clock = clock
        pool = try DurableSQLite.open(path: path, cacheKiB: cacheKiB)
        lookups = SQLitePointReads(path: path, cacheKiB: cacheKiB)
    }

    package func migrate() async throws {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE status_registrations (
                        public_key BLOB NOT NULL,
                        installation_id TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        registration BLOB,
                        updated_at REAL NOT NULL,
                        PRIMARY KEY (public_key, installation_id)
                    );
                    CREATE TABLE status_identity (
                        id INTEGER PRIMARY KEY CHECK (id = 0),
                        private_key BLOB NOT NULL
                    );
                    CREATE TABLE status_responses (
                        message_id BLOB PRIMARY KEY,
                        response BLOB NOT NULL,
                        expires_at REAL NOT NULL
                    );
                    CREATE INDEX status_responses_expiry ON status_responses (expires_at);
                    """)
        }
        Self.registerGorushQueue(&migrator)
        try migrator.migrate(pool)
    }

    package func identity(orCreate candidate: [UInt8]) async throws -> [UInt8] {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO status_identity (id, private_key) VALUES (0, ?) ON CONFLICT (id) DO NOTHING", arguments: [Data(candidate)]
            )
            let stored = try Data.fetchOne(db, sql: "SELECT private_key FROM status_identity WHERE id = 0")
            return stored.map { [UInt8]($0) } ?? candidate
        }
    }

    package func registration(publicKey: [UInt8], installationId: String) async throws -> StoredRegistration? {
        try lookups.first(
            "SELECT version, registration FROM status_registrations WHERE public_key = ? AND installation_id = ?",
            [.blob(publicKey), .text(installationId)]
        ) { row in
            StoredRegistration(
                publicKey: publicKey, installationId: installationId, version: UInt64(clamping: row.integer(0)),
                registration: row.blob(1))
        }
    }

    package func registrations(publicKeys: [[UInt8]]) async throws -> [StoredRegistration] {
        guard !publicKeys.isEmpty else { return [] }
        return try readHere { db in
            let marks = Array(repeating: "?", count: publicKeys.count).joined(separator: ", ")
            return try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT public_key, installation_id, version, registration FROM status_registrations
                        WHERE registration IS NOT NULL AND public_key IN (\(marks)) ORDER BY public_key, installation_id
                        """),
                arguments: StatementArguments(publicKeys.map { Data($0) })
            ).map { row in
                StoredRegistration(
                    publicKey: [UInt8](row["public_key"] as Data), installationId: row["installation_id"],
                    version: UInt64(row["version"] as Int64), registration: (row["registration"] as Data?).map { [UInt8]($0) })
            }
        }
    }

    package func write(_ row: StoredRegistration) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO status_registrations (public_key, installation_id, version, registration, updated_at)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (public_key, installation_id) DO UPDATE
                    SET version = excluded.version, registration = excluded.registration, updated_at = excluded.updated_at
                    WHERE status_registrations.version < excluded.version
                    """,
                arguments: [
                    Data(row.publicKey), row.installationId, Int64(clamping: row.version), row.registration.map { Data($0) },
                    clock.date.timeIntervalSince1970,
                ])
            return db.changesCount > 0
        }
    }

    package func dropRegistration(publicKey: [UInt8], installationId: String, version: UInt64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE status_registrations SET registration = NULL, updated_at = ?
                    WHERE public_key = ? AND installation_id = ? AND version = ?
                    """,
                arguments: [clock.date.timeIntervalSince1970, Data(publicKey), installationId, Int64(clamping: version)])
        }
    }

    package func cachedResponse(messageId: [UInt8], now: Date) async throws -> [UInt8]? {
        try lookups.first(
            "SELECT response FROM status_responses WHERE message_id = ? AND expires_at > ?",
            [.blob(messageId), .real(now.timeIntervalSince1970)]
        ) { row in row.blob(0) ?? [] }
    }

    /// One Herald serves the file (docs/status-protocol.md), so the ids it holds are all the ones
    /// there are.
    package func cachedMessageIds(now: Date, digest: @Sendable (UnsafeRawBufferPointer) -> UInt64) async throws -> [UInt64]? {
        try await pool.read { db in
            var digests: [UInt64] = []
            let ids = try Data.fetchCursor(
                db, sql: "SELECT message_id FROM status_responses WHERE expires_at > ?", arguments: [now.timeIntervalSince1970])
            while let id = try ids.next() { digests.append(id.withUnsafeBytes(digest)) }
            return digests
        }
    }

    /// How many rowids the cached answers span. Each of min() and max() in a subquery of its own:
    /// SQLite finds a lone min or max at one end of the table, but `max(rowid) - min(rowid)` in one
    /// SELECT scans every row (16 ms at 100 000 answers, once every 256 answers cached).
    static let rowidSpanSQL = "SELECT (SELECT max(rowid) FROM status_responses) - (SELECT min(rowid) FROM status_responses) + 1"

    /// Writes the entries in one transaction (the Status server's response cache writes the
    /// answers of many push requests at once: `ResponseCache`). The cache only spares a retried
    /// request its work: its commit is not synced (`synchronous=NORMAL` for this transaction; the
    /// WAL reaches the disk with the next registration's commit or checkpoint), so an answered push
    /// request costs no fsync.
    package func cacheResponses(_ entries: [CachedResponse], limit: Int) async throws {
        guard !entries.isEmpty else { return }
        let prune = StatusStoreMaintenance.countInserts(entries.count, on: inserts)
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
            try db.inTransaction {
                let insert = try db.cachedStatement(
                    sql: "INSERT OR REPLACE INTO status_responses (message_id, response, expires_at) VALUES (?, ?, ?)")
                for entry in entries {
                    try insert.stepInPlace(in: db) { parameters in
                        parameters.blob(entry.messageId)
                        parameters.blob(entry.response)
                        parameters.real(entry.expires.timeIntervalSince1970)
                    }
                }
                guard prune else { return .commit }
                try db.execute(sql: "DELETE FROM status_responses WHERE expires_at <= ?", arguments: [clock.date.timeIntervalSince1970])
                // Each insert takes the next rowid, so there are at most as many rows as their rowids
                // span: only over the limit is the expiry index walked (`limit` entries deep), and the
                // table is then cut to nine tenths of it, so that walk comes once per tenth of the
                // limit inserted, not every `pruneEvery` inserts.
                let span = try Int.fetchOne(db, sql: Self.rowidSpanSQL) ?? 0
                guard span > limit else { return .commit }
                try db.execute(
                    sql: """
                        DELETE FROM status_responses WHERE message_id IN (
                            SELECT message_id FROM status_responses ORDER BY expires_at DESC LIMIT -1 OFFSET ?)
                        """, arguments: [limit - limit / 10])
                return .commit
            }
        }
    }

    /// GRDB's synchronous read, on the calling thread (a non-async function, so the asynchronous
    /// overload is not chosen). Each read is one SELECT, which SQLite runs on one snapshot by itself,
    /// so the read is not wrapped in a transaction as `read` would (BEGIN and COMMIT were two of the
    /// four statements each lookup ran).
    private func readHere<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.unsafeRead(body)
    }

    package func close() async {
        lookups.close()
        await DurableSQLite.close(pool)
    }
}
