import Foundation
package import HeraldCore
import HeraldPostgres
package import Logging
package import Metrics
import NIOCore
import PostgresNIO
import Pushkins
package import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#endif

/// The ADAMANT store for several Herald instances: PostgreSQL, the same tables (devices, cursors,
/// pushed keys), and a polling lease (`PostgresLease`) so that one instance polls at a time and
/// another takes over within `retry` when it dies (docs/adamant.md, "Several instances"). A batch
/// is pushed only after `confirmLease()` read this instance's epoch, and every cursor commit reads
/// the epoch `FOR SHARE` in its transaction and is refused unless it is still its own.
package final class PostgresAdamantStore: AdamantStore {
    /// Its connections (`PostgresPool`).
    private let pool: PostgresPool
    private var client: PostgresClient { pool.client }
    private let logger: Logger
    package let url: String
    /// How often the lease holder proves its lock's connection alive; an answer later than five
    /// times this counts as a lost lease (a database merely slow for a moment keeps its poller).
    let leaseCheck: Duration
    /// How long an operation may wait for the database (`adamant.store_timeout`); past it the
    /// operation fails (the poll is retried) instead of holding its poller on a query that a
    /// connection PostgreSQL's death left behind would never complete.
    let timeout: Duration
    /// The outcome of its latest operation, for `/health`.
    let tracker: ComponentHealth
    /// Every operation's bound and health (a lost lease is an answer, not a failure).
    private let bound: PostgresStoreBound
    /// The rows' times and the lease's waits (docs/architecture.md, "Time").
    let clock: any HeraldClock
    package var health: ComponentHealth? { tracker }
    /// The polling lease and its epoch, on this store's database.
    let lease: PostgresLease
    package static let migrationKey: Int64 = 4_242_003

    package struct URLError: Error, CustomStringConvertible {
        package var description: String
    }

    package init(
        url: String, logger: Logger, leaseCheck: Duration = .seconds(1), timeout: Duration = .seconds(5), maxConnections: Int = 8,
        metrics: (any MetricsFactory)? = nil, clock: any HeraldClock
    ) throws {
        self.url = url
        self.clock = clock
        tracker = ComponentHealth(name: "adamant_store", metrics: metrics, clock: clock, logger: logger)
        self.logger = logger
        self.leaseCheck = leaseCheck
        self.timeout = timeout
        let configurations: (client: PostgresClient.Configuration, connection: PostgresConnection.Configuration)
        do {
            configurations = try PostgresURL.configurations(url, maxConnections: maxConnections)
        } catch {
            throw URLError(description: error.description)
        }
        pool = PostgresPool(configuration: configurations.client, logger: logger)
        bound = PostgresStoreBound(
            connection: configurations.connection, pool: pool, timeout: timeout, clock: clock.loopClock,
            tracker: tracker, isAnswer: { $0 is LeaseLost })
        lease = PostgresLease(pool: pool, logger: logger, check: leaseCheck, timeout: timeout, health: tracker, clock: clock)
    }

    package var services: [any Service] { [pool, PostgresStartCheck(bound: bound)] }

    /// `work` within `timeout` (`PostgresDeadline`); its outcome is the store's health.
    /// A lost lease is an answer of the database, not a failure of it.
    private func bounded<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await bound.run(work)
    }

    /// Creates the tables, one instance at a time (a transaction-scoped advisory lock). Waits for
    /// a database that is down as long as it takes, but ends at once when cancelled, also while
    /// PostgreSQL hangs (each statement through `PostgresDeadline.rows`): a query that never
    /// answers must not hold a shutdown (it did, past ServiceLifecycle's cancellation limit).
    package func migrate() async throws {
        try await PostgresMigration.run(
            client, lock: Self.migrationKey,
            [
                """
                CREATE TABLE IF NOT EXISTS adamant_devices (
                    address TEXT NOT NULL, token TEXT NOT NULL, provider TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (address, token))
                """,
                "CREATE INDEX IF NOT EXISTS adamant_devices_token ON adamant_devices (token)",
                "CREATE TABLE IF NOT EXISTS adamant_cursors (worker TEXT PRIMARY KEY, height BIGINT NOT NULL, updated_at DOUBLE PRECISION NOT NULL)",
                "CREATE TABLE IF NOT EXISTS adamant_pushed (key TEXT PRIMARY KEY, seq BIGSERIAL)",
                "CREATE INDEX IF NOT EXISTS adamant_pushed_seq ON adamant_pushed (seq)",
                """
                CREATE TABLE IF NOT EXISTS adamant_lease (
                    id SMALLINT PRIMARY KEY, epoch BIGINT NOT NULL, holder TEXT NOT NULL, taken_at DOUBLE PRECISION NOT NULL)
                """,
            ], within: nil, clock: clock.loopClock, logger: logger)
    }

    package func cursor(_ worker: String) async throws -> Int64? {
        try await bounded { [client, logger] in
            let rows = try await client.query("SELECT height FROM adamant_cursors WHERE worker = \(worker)", logger: logger)
            for try await height in rows.decode(Int64.self) { return height }
            return nil
        }
    }

    private static func setCursor(
        _ connection: PostgresConnection, _ worker: String, _ cursor: Int64, at now: Date, logger: Logger
    ) async throws {
        try await connection.query(
            """
            INSERT INTO adamant_cursors (worker, height, updated_at) VALUES (\(worker), \(cursor), \(now.timeIntervalSince1970))
            ON CONFLICT (worker) DO UPDATE SET height = EXCLUDED.height, updated_at = EXCLUDED.updated_at
            """, logger: logger)
    }

    package func apply(_ changes: [DeviceChange], worker: String, cursor: Int64) async throws {
        let logger = self.logger
        let now = clock.date
        try await fencedTransaction { connection in
            for change in changes {
                switch change.action {
                case .add(let provider):
                    try await connection.query(
                        """
                        INSERT INTO adamant_devices (address, token, provider, updated_at)
                        VALUES (\(change.address), \(change.token), \(provider.rawValue), \(now.timeIntervalSince1970))
                        ON CONFLICT (address, token) DO UPDATE SET provider = EXCLUDED.provider, updated_at = EXCLUDED.updated_at
                        """, logger: logger)
                case .remove:
                    try await connection.query(
                        "DELETE FROM adamant_devices WHERE address = \(change.address) AND token = \(change.token)", logger: logger)
                }
            }
            try await Self.setCursor(connection, worker, cursor, at: now, logger: logger)
        }
    }

    package func devices(addresses: [String]) async throws -> [RegisteredDevice] {
        guard !addresses.isEmpty else { return [] }
        return try await bounded { [client, logger] in
            let rows = try await client.query(
                "SELECT address, token, provider FROM adamant_devices WHERE address = ANY(\(addresses)) ORDER BY address, token",
                logger: logger)
            var result: [RegisteredDevice] = []
            for try await (address, token, provider) in rows.decode((String, String, String).self) {
                guard let provider = AdamantProvider(rawValue: provider) else { continue }
                result.append(RegisteredDevice(address: address, token: token, provider: provider))
            }
            return result
        }
    }

    package func remove(token: String, provider: AdamantProvider) async throws -> Int {
        try await bounded { [client, logger] in
            let rows = try await client.query(
                "DELETE FROM adamant_devices WHERE token = \(token) AND provider = \(provider.rawValue) RETURNING address", logger: logger)
            var count = 0
            for try await _ in rows.decode(String.self) { count += 1 }
            return count
        }
    }

    package func pushed(among keys: [String]) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        return try await bounded { [client, logger] in
            let rows = try await client.query("SELECT key FROM adamant_pushed WHERE key = ANY(\(keys))", logger: logger)
            var found: Set<String> = []
            for try await key in rows.decode(String.self) { found.insert(key) }
            return found
        }
    }

    /// Not fenced: it records what was sent, whoever holds the lease now.
    package func markPushed(_ keys: [String]) async throws {
        guard !keys.isEmpty else { return }
        try await bounded { [client, logger] in
            let rows = try await client.query(
                "INSERT INTO adamant_pushed (key) SELECT unnest(\(keys)::text[]) ON CONFLICT (key) DO NOTHING", logger: logger)
            for try await _ in rows {}
        }
    }

    package func commit(pushed keys: [String], worker: String, cursor: Int64, keep: Int) async throws {
        let logger = self.logger
        let now = clock.date
        try await fencedTransaction { connection in
            if !keys.isEmpty {
                try await connection.query(
                    "INSERT INTO adamant_pushed (key) SELECT unnest(\(keys)::text[]) ON CONFLICT (key) DO NOTHING", logger: logger)
                try await connection.query(
                    "DELETE FROM adamant_pushed WHERE seq <= (SELECT COALESCE(MAX(seq), 0) FROM adamant_pushed) - \(Int64(keep))",
                    logger: logger)
            }
            try await Self.setCursor(connection, worker, cursor, at: now, logger: logger)
        }
    }

    /// A transaction that commits only while this instance's lease epoch is the current one (when it
    /// sought the lease at all); `LeaseLost` otherwise, nothing written.
    private func fencedTransaction(_ body: @escaping @Sendable (PostgresConnection) async throws -> Void) async throws {
        let expected = try lease.expectedEpoch()
        try await bounded { [client, logger] in
            do {
                try await client.withTransaction(logger: logger) { connection in
                    if let expected {
                        let current = try await PostgresLease.epoch(connection, lock: true, logger: logger)
                        guard current == expected else {
                            throw LeaseLost("another instance holds it now (epoch \(current ?? 0), ours \(expected))")
                        }
                    }
                    try await body(connection)
                }
            } catch let error as PostgresTransactionError {
                if let lost = error.closureError as? LeaseLost { throw lost }
                throw error
            }
        }
    }

    package func confirmLease() async throws {
        guard let expected = try lease.expectedEpoch() else { return }
        let current = try await bounded { [client, logger] in
            try await client.withConnection { try await PostgresLease.epoch($0, lock: false, logger: logger) }
        }
        guard current == expected else { throw LeaseLost("another instance holds it now") }
    }

    package func whileLeader(retry: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await lease.whileLeader(retry: retry, body)
    }

    /// Ends the server processes holding this database's polling lock (`PostgresLease`). For tests
    /// of the fence.
    func terminateLeaseConnections() async throws -> Int { try await lease.terminateConnections() }

    package func close() async {}
}
