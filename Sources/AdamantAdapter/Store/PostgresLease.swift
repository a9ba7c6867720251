import Foundation
import HeraldCore
import HeraldPostgres
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The ADAMANT polling lease on PostgreSQL: a session advisory lock held on one connection, fenced
/// by an epoch (docs/adamant.md, "Several instances"). Whoever takes the lock bumps
/// `adamant_lease.epoch` on that connection. The holder checks its connection every `check` (a
/// failed or late answer: the lock may be gone, so its pollers are cancelled). A holder whose
/// connection died (a PostgreSQL crash or restart) therefore stops before, or at the latest at,
/// its next fenced commit (`PostgresAdamantStore`), and the instance that took over never sees
/// that commit land after its own.
final class PostgresLease: Sendable {
    private let pool: PostgresPool
    private var client: PostgresClient { pool.client }
    private let logger: Logger
    /// How often the holder proves its lock's connection alive; an answer later than five times
    /// this counts as a lost lease (a database merely slow for a moment keeps its poller).
    let check: Duration
    /// How long taking the lock may wait for the database.
    let timeout: Duration
    /// The store's health: a lease attempt is one of its operations.
    let health: ComponentHealth
    /// The waits between attempts and the lease's `taken_at` (docs/architecture.md, "Time").
    let clock: any HeraldClock
    private let state = Mutex(State.unfenced)
    static let leaseKey: Int64 = 4_242_002

    /// Where this instance stands with the lease. `unfenced`: it never sought it (the store used
    /// on its own, as tools and tests do), so commits are not fenced.
    enum State: Sendable, Equatable {
        case unfenced
        case held(epoch: Int64)
        case lost
    }

    init(pool: PostgresPool, logger: Logger, check: Duration, timeout: Duration, health: ComponentHealth, clock: any HeraldClock) {
        self.pool = pool
        self.logger = logger
        self.check = check
        self.timeout = timeout
        self.health = health
        self.clock = clock
    }

    /// The epoch a write of this instance must find: nil when it never sought the lease (unfenced);
    /// `LeaseLost` when it no longer holds it.
    func expectedEpoch() throws -> Int64? {
        switch state.withLock({ $0 }) {
        case .unfenced: return nil
        case .held(let epoch): return epoch
        case .lost: throw LeaseLost("this instance no longer holds it")
        }
    }

    static func epoch(_ connection: PostgresConnection, lock: Bool, logger: Logger) async throws -> Int64? {
        let rows = try await connection.query(
            lock ? "SELECT epoch FROM adamant_lease WHERE id = 1 FOR SHARE" : "SELECT epoch FROM adamant_lease WHERE id = 1", logger: logger
        )
        for try await epoch in rows.decode(Int64.self) { return epoch }
        return nil
    }

    /// Holds the advisory lock on one connection while `body` runs, and proves that connection
    /// alive every `leaseCheck`: when it fails, `body` is cancelled (its pollers stop) and the lock
    /// is sought again. A dead instance's connection closes and its lock with it. Ends when `body`
    /// returns, or at a graceful shutdown, whatever the state of the database.
    package func whileLeader(retry: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
        state.withLock { $0 = .lost }
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                if try await cancelWhenGracefulShutdown({ try await self.leadOnce(body) }) { return }
                health.succeeded()  // another instance holds it: the database answered
            } catch let lost as LeaseLost {
                logger.warning("ADAMANT polling lease lost; pollers stopped", metadata: ["why": "\(lost.why)"])
            } catch {
                if Task.isShuttingDownGracefully || Task.isCancelled { break }
                health.failed(error)
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
        let (logger, holder, check, timeout) = (self.logger, InstanceName.current, self.check, self.timeout)
        return try await client.withConnection { connection in
            do {
                let taken = try await PostgresDeadline.rows(
                    connection, "SELECT pg_try_advisory_lock(\(Self.leaseKey))", within: timeout, clock: clock.loopClock, logger: logger)
                guard try taken.first?.decode(Bool.self) == true else { return false }
                let bumped = try await PostgresDeadline.rows(
                    connection,
                    """
                    INSERT INTO adamant_lease (id, epoch, holder, taken_at) VALUES (1, 1, \(holder), \(clock.date.timeIntervalSince1970))
                    ON CONFLICT (id) DO UPDATE SET epoch = adamant_lease.epoch + 1, holder = EXCLUDED.holder, taken_at = EXCLUDED.taken_at
                    RETURNING epoch
                    """, within: timeout, clock: clock.loopClock, logger: logger)
                let epoch = try bumped.first?.decode(Int64.self) ?? 0
                state.withLock { $0 = .held(epoch: epoch) }
                logger.notice("ADAMANT polling lease taken", metadata: ["epoch": "\(epoch)"])
                defer {
                    state.withLock { $0 = .lost }
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
                await Self.release(connection, within: check, clock: clock.loopClock, logger: logger)
                throw error
            }
            await Self.release(connection, within: check, clock: clock.loopClock, logger: logger)
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
                _ = try await PostgresDeadline.rows(connection, "SELECT 1", within: interval * 5, clock: clock.loopClock, logger: logger)
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
    private static func release(
        _ connection: PostgresConnection, within limit: Duration, clock: any LoopClock, logger: Logger
    ) async {
        do {
            _ = try await PostgresDeadline.rows(
                connection, "SELECT pg_advisory_unlock(\(Self.leaseKey))", within: limit, clock: clock, logger: logger)
        } catch {
            try? await connection.close()
        }
    }

    /// Ends the server processes holding this database's polling lock, as a PostgreSQL crash or an
    /// operator's `pg_terminate_backend` would; how many. For tests of the fence.
    func terminateConnections() async throws -> Int {
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
}
