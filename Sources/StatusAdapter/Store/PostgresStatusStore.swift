package import Foundation
package import HeraldCore
package import HeraldPostgres
package import Logging
package import Metrics
import NIOCore
import PostgresNIO
import Pushkins
package import ServiceLifecycle
import Synchronization

/// The store for several Herald instances acting as one Status server: PostgreSQL, with the
/// same schema and the same conditional writes as the SQLite store (a newer version always wins,
/// concurrent writers cannot lose it). Its connection pool is a `Service` (`services`): queries
/// wait until the pool runs in the gateway's service group.
package final class PostgresStatusStore: StatusStore {
    /// Its connections (`PostgresPool`).
    let pool: PostgresPool
    var client: PostgresClient { pool.client }
    private let inserts = AtomicCounter()
    /// The URL it was opened with.
    package let url: String
    /// How long a request's read or write may wait for the database (`status.store_timeout`):
    /// past it the request is answered as failed for now (gorush: 503 with `Retry-After`), rather
    /// than held while the database is down.
    let timeout: Duration

    /// The database did not answer within `timeout` (it is down or unreachable).
    package typealias Unavailable = PostgresDeadline.Unavailable

    /// The outcome of its latest operation, for `/health`.
    let tracker: ComponentHealth
    /// Every operation's bound and health.
    let bound: PostgresStoreBound
    /// The gorush queue's depth as last read, which spares most inserts a count of the queue.
    let queueDepth = GorushQueueDepth()
    /// The rows' times and the queue's claims (docs/architecture.md, "Time").
    let clock: any HeraldClock
    package var health: ComponentHealth? { tracker }
    /// The database's clock less this host's, in seconds, as measured at start-up: a gorush
    /// enqueue carries its deadline in the database's time (`insertGorush`).
    let databaseClockOffset = Mutex<Double>(0)

    package struct URLError: Error, CustomStringConvertible {
        package var description: String
    }

    package init(
        url: String, logger: Logger, timeout: Duration = .seconds(5), maxConnections: Int = 16, metrics: (any MetricsFactory)? = nil,
        clock: any HeraldClock
    ) throws {
        self.url = url
        self.clock = clock
        self.timeout = timeout
        tracker = ComponentHealth(name: "status_store", metrics: metrics, clock: clock, logger: logger)
        let configurations: (client: PostgresClient.Configuration, connection: PostgresConnection.Configuration)
        do {
            configurations = try PostgresURL.configurations(url, maxConnections: maxConnections)
        } catch {
            throw URLError(description: error.description)
        }
        pool = PostgresPool(configuration: configurations.client, logger: logger)
        bound = PostgresStoreBound(
            connection: configurations.connection, pool: pool, timeout: timeout, clock: clock.loopClock,
            tracker: tracker)
    }

    package var services: [any Service] { [pool, PostgresStartCheck(bound: bound)] }

    /// `work` within `timeout`, else `Unavailable` (`PostgresDeadline`); every operation but the
    /// start-up ones goes through it, and its outcome is the store's health.
    func bounded<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await bound.run(work)
    }

    package func migrate() async throws {
        // Waits for the database as long as it takes (an instance started while it is down serves
        // once it is back), but ends at once when cancelled.
        try await PostgresMigration.run(
            client, lock: 4_242_001,
            [
                """
                CREATE TABLE IF NOT EXISTS status_registrations (
                    public_key BYTEA NOT NULL,
                    installation_id TEXT NOT NULL,
                    version BIGINT NOT NULL,
                    registration BYTEA,
                    updated_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (public_key, installation_id)
                )
                """,
                "CREATE TABLE IF NOT EXISTS status_identity (id INTEGER PRIMARY KEY CHECK (id = 0), private_key BYTEA NOT NULL)",
                """
                CREATE TABLE IF NOT EXISTS status_responses (
                    message_id BYTEA PRIMARY KEY, response BYTEA NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                """,
                "CREATE INDEX IF NOT EXISTS status_responses_expiry ON status_responses (expires_at)",
            ] + Self.gorushQueueSchema, within: nil, clock: clock.loopClock, logger: Self.logger
        ) { [self] connection in
            // The database's clock against ours, for the gorush enqueue's deadline.
            let before = clock.date.timeIntervalSince1970
            let rows = try await PostgresDeadline.rows(
                connection, "SELECT extract(epoch FROM clock_timestamp())::float8", within: nil, clock: clock.loopClock, logger: Self.logger
            )
            let after = clock.date.timeIntervalSince1970
            if let theirs = try rows.first?.decode(Double.self) {
                databaseClockOffset.withLock { $0 = theirs - (before + after) / 2 }
            }
        }
    }

    /// Runs a statement and reads (discards) its rows.
    private func exec(_ query: PostgresQuery) async throws {
        for try await _ in try await client.query(query, logger: Self.logger) {}
    }

    static let logger = Logger(label: "herald.status.postgres")

    package func identity(orCreate candidate: [UInt8]) async throws -> [UInt8] {
        try await client.withConnection { connection in
            _ = try await PostgresDeadline.rows(
                connection,
                "INSERT INTO status_identity (id, private_key) VALUES (0, \(ByteBuffer(bytes: candidate))) ON CONFLICT (id) DO NOTHING",
                within: nil, clock: clock.loopClock, logger: Self.logger)
            let rows = try await PostgresDeadline.rows(
                connection, "SELECT private_key FROM status_identity WHERE id = 0", within: nil, clock: clock.loopClock, logger: Self.logger
            )
            return try rows.first.map { Array(try $0.decode(ByteBuffer.self).readableBytesView) } ?? candidate
        }
    }

    package func registration(publicKey: [UInt8], installationId: String) async throws -> StoredRegistration? {
        try await bounded { [self] in
            let rows = try await client.query(
                """
                SELECT version, registration FROM status_registrations
                WHERE public_key = \(ByteBuffer(bytes: publicKey)) AND installation_id = \(installationId)
                """, logger: Self.logger)
            for try await (version, blob) in rows.decode((Int64, ByteBuffer?).self) {
                return StoredRegistration(
                    publicKey: publicKey, installationId: installationId, version: UInt64(version),
                    registration: blob.map { Array($0.readableBytesView) })
            }
            return nil
        }
    }

    package func registrations(publicKeys: [[UInt8]]) async throws -> [StoredRegistration] {
        try await bounded { [self] in
            guard !publicKeys.isEmpty else { return [] }
            let keys = publicKeys.map { ByteBuffer(bytes: $0) }
            let rows = try await client.query(
                """
                SELECT public_key, installation_id, version, registration FROM status_registrations
                WHERE registration IS NOT NULL AND public_key = ANY(\(keys)) ORDER BY public_key, installation_id
                """, logger: Self.logger)
            var result: [StoredRegistration] = []
            for try await (key, installation, version, blob) in rows.decode((ByteBuffer, String, Int64, ByteBuffer?).self) {
                result.append(
                    StoredRegistration(
                        publicKey: Array(key.readableBytesView), installationId: installation, version: UInt64(version),
                        registration: blob.map { Array($0.readableBytesView) }))
            }
            return result
        }
    }

    package func write(_ row: StoredRegistration) async throws -> Bool {
        try await bounded { [self] in
            let blob = row.registration.map { ByteBuffer(bytes: $0) }
            let rows = try await client.query(
                """
                INSERT INTO status_registrations (public_key, installation_id, version, registration, updated_at)
                VALUES (\(ByteBuffer(bytes: row.publicKey)), \(row.installationId), \(Int64(clamping: row.version)), \(blob), \(clock.date.timeIntervalSince1970))
                ON CONFLICT (public_key, installation_id) DO UPDATE
                SET version = EXCLUDED.version, registration = EXCLUDED.registration, updated_at = EXCLUDED.updated_at
                WHERE status_registrations.version < EXCLUDED.version
                RETURNING version
                """, logger: Self.logger)
            for try await _ in rows.decode(Int64.self) { return true }
            return false
        }
    }

    package func dropRegistration(publicKey: [UInt8], installationId: String, version: UInt64) async throws {
        try await bounded { [self] in
            try await exec(
                """
                UPDATE status_registrations SET registration = NULL, updated_at = \(clock.date.timeIntervalSince1970)
                WHERE public_key = \(ByteBuffer(bytes: publicKey)) AND installation_id = \(installationId) AND version = \(Int64(clamping: version))
                """)
        }
    }

    package func cachedResponse(messageId: [UInt8], now: Date) async throws -> [UInt8]? {
        try await bounded { [self] in
            let rows = try await client.query(
                """
                SELECT response FROM status_responses
                WHERE message_id = \(ByteBuffer(bytes: messageId)) AND expires_at > \(now.timeIntervalSince1970)
                """, logger: Self.logger)
            for try await response in rows.decode(ByteBuffer.self) { return Array(response.readableBytesView) }
            return nil
        }
    }

    /// The batch in one statement (one round trip, and all of it or none), an id's last entry
    /// winning as it would written one by one (an `ON CONFLICT DO UPDATE` cannot touch a row twice
    /// in one statement); pruning as the protocol describes.
    package func cacheResponses(_ entries: [CachedResponse], limit: Int) async throws {
        try await bounded { [self] in
            guard !entries.isEmpty else { return }
            let batch = CachedResponse.lastOfEachId(entries)
            let ids = batch.map { ByteBuffer(bytes: $0.messageId) }
            let responses = batch.map { ByteBuffer(bytes: $0.response) }
            let expiries = batch.map { $0.expires.timeIntervalSince1970 }
            try await exec(
                """
                INSERT INTO status_responses (message_id, response, expires_at)
                SELECT * FROM unnest(\(ids)::bytea[], \(responses)::bytea[], \(expiries)::float8[])
                ON CONFLICT (message_id) DO UPDATE SET response = EXCLUDED.response, expires_at = EXCLUDED.expires_at
                """)
            guard StatusStoreMaintenance.countInserts(entries.count, on: inserts) else { return }
            try await exec("DELETE FROM status_responses WHERE expires_at <= \(clock.date.timeIntervalSince1970)")
            try await exec(
                """
                DELETE FROM status_responses WHERE message_id IN (
                    SELECT message_id FROM status_responses ORDER BY expires_at DESC OFFSET \(limit))
                """)
        }
    }

    /// Nothing of its own to release: the pool stops with the service group.
    package func close() async {}
}
