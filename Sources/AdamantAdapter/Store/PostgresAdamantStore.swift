import Foundation
import HeraldCore
import HeraldPostgres
import HeraldUpstream
import Logging
import Metrics
import NIOCore
import PostgresNIO
import Pushkins
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The ADAMANT store for several Herald instances: PostgreSQL, the same tables, and a polling
/// lease so that one instance polls at a time and another takes over within `retry` when it dies
/// (docs/adamant.md, "Several instances").
///
/// The lease is a session advisory lock held on one connection, fenced by an epoch: whoever takes
/// the lock bumps `adamant_lease.epoch` on that connection. The holder checks its connection every
/// `leaseCheck` (a failed or late answer: the lock may be gone, so its pollers are cancelled), a
/// batch is pushed only after `confirmLease()` read its own epoch, and every cursor commit reads
/// the epoch `FOR SHARE` in its transaction and is refused unless it is still its own. A holder
/// whose connection died (a PostgreSQL crash or restart) therefore stops before, or at the latest
/// at, its next commit, and the instance that took over never sees that commit land after its own.
package final class PostgresAdamantStore: AdamantStore {
    private let client: PostgresClient
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
    /// The rows' times and the lease's waits (docs/architecture.md, "Time").
    let clock: any HeraldClock
    package var health: ComponentHealth? { tracker }
    private let lease = Mutex(LeaseState.unfenced)
    static let leaseKey: Int64 = 4_242_002
    package static let migrationKey: Int64 = 4_242_003

    /// Where this instance stands with the polling lease. `unfenced`: it never sought it (the store
    /// used on its own, as tools and tests do), so commits are not fenced.
    enum LeaseState: Sendable, Equatable {
        case unfenced
        case held(epoch: Int64)
        case lost
    }

    package struct URLError: Error, CustomStringConvertible {
        package var description: String
    }

    package init(
        url: String, logger: Logger, leaseCheck: Duration = .seconds(1), timeout: Duration = .seconds(5), maxConnections: Int = 8,
        metrics: (any MetricsFactory)? = nil, clock: any HeraldClock
    ) throws {
        self.url = url
        self.clock = clock
        tracker = ComponentHealth(name: "adamant_store", metrics: metrics, clock: clock)
        self.logger = logger
        self.leaseCheck = leaseCheck
        self.timeout = timeout
        do {
            client = PostgresClient(
                configuration: try PostgresURL.configuration(url, maxConnections: maxConnections), backgroundLogger: logger)
        } catch {
            throw URLError(description: error.description)
        }
    }

    package var services: [any Service] { [client] }

    /// `work` within `timeout` (`PostgresDeadline`); its outcome is the store's health.
    /// A lost lease is an answer of the database, not a failure of it.
    private func bounded<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await tracker.track({ try await PostgresDeadline.bounded(timeout, work) }, isAnswer: { $0 is LeaseLost })
    }

    /// Creates the tables, one instance at a time (a transaction-scoped advisory lock). Waits for
    /// a database that is down as long as it takes, but ends at once when cancelled, also while
    /// PostgreSQL hangs (each statement through `PostgresDeadline.rows`): a query that never
    /// answers must not hold a shutdown (it did, past ServiceLifecycle's cancellation limit).
    package func migrate() async throws {
        try await client.withConnection { [logger] connection in
            func exec(_ query: PostgresQuery) async throws {
                _ = try await PostgresDeadline.rows(connection, query, within: nil, logger: logger)
            }
            try await exec("BEGIN")
            do {
                try await exec("SELECT pg_advisory_xact_lock(\(Self.migrationKey))")
                try await exec(
                    """
                    CREATE TABLE IF NOT EXISTS adamant_devices (
                        address TEXT NOT NULL, token TEXT NOT NULL, provider TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
                        PRIMARY KEY (address, token))
                    """)
                try await exec("CREATE INDEX IF NOT EXISTS adamant_devices_token ON adamant_devices (token)")
                try await exec(
                    "CREATE TABLE IF NOT EXISTS adamant_cursors (worker TEXT PRIMARY KEY, height BIGINT NOT NULL, updated_at DOUBLE PRECISION NOT NULL)"
                )
                try await exec("CREATE TABLE IF NOT EXISTS adamant_pushed (key TEXT PRIMARY KEY, seq BIGSERIAL)")
                try await exec("CREATE INDEX IF NOT EXISTS adamant_pushed_seq ON adamant_pushed (seq)")
                try await exec(
                    """
                    CREATE TABLE IF NOT EXISTS adamant_lease (
                        id SMALLINT PRIMARY KEY, epoch BIGINT NOT NULL, holder TEXT NOT NULL, taken_at DOUBLE PRECISION NOT NULL)
                    """)
                try await exec("COMMIT")
            } catch {
                // A connection left inside the transaction (the rollback cut short too) is closed
                // rather than given back to the pool.
                if (try? await exec("ROLLBACK")) == nil { try? await connection.close() }
                throw error
            }
        }
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
        let expected = try expectedEpoch()
        try await bounded { [client, logger] in
            do {
                try await client.withTransaction(logger: logger) { connection in
                    if let expected {
                        let current = try await Self.epoch(connection, lock: true, logger: logger)
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

    /// The epoch a write of this instance must find: nil when it never sought the lease (unfenced);
    /// `LeaseLost` when it no longer holds it.
    private func expectedEpoch() throws -> Int64? {
        switch lease.withLock({ $0 }) {
        case .unfenced: return nil
        case .held(let epoch): return epoch
        case .lost: throw LeaseLost("this instance no longer holds it")
        }
    }

    private static func epoch(_ connection: PostgresConnection, lock: Bool, logger: Logger) async throws -> Int64? {
        let rows = try await connection.query(
            lock ? "SELECT epoch FROM adamant_lease WHERE id = 1 FOR SHARE" : "SELECT epoch FROM adamant_lease WHERE id = 1", logger: logger
        )
        for try await epoch in rows.decode(Int64.self) { return epoch }
        return nil
    }

    package func confirmLease() async throws {
        guard let expected = try expectedEpoch() else { return }
        let current = try await bounded { [client, logger] in
            try await client.withConnection { try await Self.epoch($0, lock: false, logger: logger) }
        }
        guard current == expected else { throw LeaseLost("another instance holds it now") }
    }

    /// Holds the advisory lock on one connection while `body` runs, and proves that connection
    /// alive every `leaseCheck`: when it fails, `body` is cancelled (its pollers stop) and the lock
    /// is sought again. A dead instance's connection closes and its lock with it. Ends when `body`
    /// returns, or at a graceful shutdown, whatever the state of the database.
    package func whileLeader(retry: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
        lease.withLock { $0 = .lost }
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                if try await cancelWhenGracefulShutdown({ try await self.leadOnce(body) }) { return }
                tracker.succeeded()  // another instance holds it: the database answered
            } catch let lost as LeaseLost {
                logger.warning("ADAMANT polling lease lost; pollers stopped", metadata: ["why": "\(lost.why)"])
            } catch {
                if Task.isShuttingDownGracefully || Task.isCancelled { break }
                tracker.failed(error)
                logger.warning("ADAMANT polling lease not taken", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await cancelWhenGracefulShutdown { try await self.clock.wait(retry) }
        }
    }

    /// One attempt: false when another instance holds the lock; true once `body` returned. Every
    /// query on the lock's connection is bounded (the store timeout to take it, `lease_check` to
    /// prove and give it back) and ends at once on cancellation: a connection whose server died
    /// without a goodbye may never answer, and neither a lease attempt nor a shutdown waits for it.
    private func leadOnce(_ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        let (logger, holder, check, timeout) = (self.logger, Self.holderName, leaseCheck, self.timeout)
        return try await client.withConnection { connection in
            do {
                let taken = try await PostgresDeadline.rows(
                    connection, "SELECT pg_try_advisory_lock(\(Self.leaseKey))", within: timeout, logger: logger)
                guard try taken.first?.decode(Bool.self) == true else { return false }
                let bumped = try await PostgresDeadline.rows(
                    connection,
                    """
                    INSERT INTO adamant_lease (id, epoch, holder, taken_at) VALUES (1, 1, \(holder), \(clock.date.timeIntervalSince1970))
                    ON CONFLICT (id) DO UPDATE SET epoch = adamant_lease.epoch + 1, holder = EXCLUDED.holder, taken_at = EXCLUDED.taken_at
                    RETURNING epoch
                    """, within: timeout, logger: logger)
                let epoch = try bumped.first?.decode(Int64.self) ?? 0
                lease.withLock { $0 = .held(epoch: epoch) }
                logger.notice("ADAMANT polling lease taken", metadata: ["epoch": "\(epoch)"])
                defer {
                    lease.withLock { $0 = .lost }
                    logger.notice("ADAMANT polling lease released")
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await body() }
                    group.addTask { try await Self.watch(connection, every: check, clock: self.clock, logger: logger) }
                    // The first to end decides: the pollers (done), or the watch (the lease is lost).
                    defer { group.cancelAll() }
                    try await group.next()
                }
            } catch {
                // The lock may be held on a live connection (also when the attempt to take it was
                // cut short: the server may have granted it).
                await Self.release(connection, within: check, logger: logger)
                throw error
            }
            await Self.release(connection, within: check, logger: logger)
            return true
        }
    }

    /// Returns never; throws `LeaseLost` when the lock's connection closed, fails a check, or
    /// answers later than five times `interval`.
    private static func watch(
        _ connection: PostgresConnection, every interval: Duration, clock: any HeraldClock, logger: Logger
    ) async throws {
        while true {
            try await clock.wait(interval)
            do {
                _ = try await PostgresDeadline.rows(connection, "SELECT 1", within: interval * 5, logger: logger)
            } catch is CancellationError {
                throw CancellationError()
            } catch is PostgresDeadline.Unavailable {
                throw LeaseLost(connection.isClosed ? "its connection closed" : "its connection did not answer within \(interval * 5)")
            } catch {
                throw LeaseLost("its connection failed: \(String(reflecting: error))")
            }
        }
    }

    /// Gives the lock back on its connection within `limit`, or closes the connection (a session
    /// lock ends with it) when it does not answer, so that no pooled connection keeps the lock.
    private static func release(_ connection: PostgresConnection, within limit: Duration, logger: Logger) async {
        do {
            _ = try await PostgresDeadline.rows(connection, "SELECT pg_advisory_unlock(\(Self.leaseKey))", within: limit, logger: logger)
        } catch {
            try? await connection.close()
        }
    }

    /// Ends the server processes holding this database's polling lock, as a PostgreSQL crash or an
    /// operator's `pg_terminate_backend` would; how many. For tests of the fence.
    func terminateLeaseConnections() async throws -> Int {
        let rows = try await client.query(
            """
            SELECT pg_terminate_backend(pid) FROM pg_locks
            WHERE locktype = 'advisory' AND classid = 0 AND objid = \(Int64(Self.leaseKey)) AND granted
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """, logger: logger)
        var count = 0
        for try await ended in rows.decode(Bool.self) where ended { count += 1 }
        return count
    }

    /// Who holds the lease, as `adamant_lease.holder` shows it: host and process id.
    static let holderName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&buffer, buffer.count - 1) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        return "\(host):\(getpid())"
    }()

    package func close() async {}
}
