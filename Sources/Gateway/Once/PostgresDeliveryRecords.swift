import Foundation
import HeraldCore
import HeraldPostgres
import Logging
import Metrics
import PostgresNIO
import Pushkins
import ServiceLifecycle
import Synchronization

/// The delivery record of a fleet (docs/operations.md, "Once"): one table in PostgreSQL, claimed
/// before the upstream call (`INSERT … ON CONFLICT`), recorded after it, expired by the window.
/// Two instances given the same notify send once between them; a claim whose instance died is
/// taken over after `repeat_takeover`. Every operation is bounded by `repeat_store_timeout`; one
/// that fails makes the caller use its memory record instead (`RepeatGuard`), and `/health` says so.
final class PostgresDeliveryRecords: DeliveryRecords {
    let client: PostgresClient
    let window: TimeInterval
    let takeover: TimeInterval
    let timeout: Duration
    let tracker: ComponentHealth
    private let ready = ReadinessGate<Void>()
    private let migrating = Atomic(false)
    private let finishes = AtomicCounter()
    static let logger = Logger(label: "herald.notify.repeats")

    init(url: String, notify: GatewayConfig.Notify, metrics: any MetricsFactory, clock: any HeraldClock) throws {
        client = PostgresClient(
            configuration: try PostgresURL.configuration(url, maxConnections: notify.repeatStoreMaxConnections),
            backgroundLogger: Self.logger)
        window = notify.repeatWindow.seconds
        takeover = notify.repeatTakeover.seconds
        timeout = notify.repeatStoreTimeout
        tracker = ComponentHealth(name: "repeat_store", metrics: metrics, clock: clock)
    }

    var health: ComponentHealth? { tracker }

    /// Its connection pool: a service of the gateway's group.
    var service: any Service { client }

    func claim(_ key: RepeatKey, now: Date) async throws -> RecordClaim {
        try await bounded {
            let at = now.timeIntervalSince1970
            // The row as it was (the statement's snapshot): none, a record that ran out, or a
            // claim that ran out, which is a takeover.
            let claimed = try await self.client.query(
                """
                WITH before AS (SELECT state FROM herald_deliveries WHERE key = \(key.digest))
                INSERT INTO herald_deliveries (key, state, expires_at) VALUES (\(key.digest), 'claimed', \(at + self.takeover))
                ON CONFLICT (key) DO UPDATE SET state = 'claimed', expires_at = EXCLUDED.expires_at
                WHERE herald_deliveries.expires_at <= \(at)
                RETURNING (SELECT state FROM before)
                """, logger: Self.logger)
            for try await previous in claimed.decode(String?.self) { return previous == "claimed" ? .takenOver : .claimed }
            let rows = try await self.client.query(
                "SELECT state FROM herald_deliveries WHERE key = \(key.digest)", logger: Self.logger)
            for try await state in rows.decode(String.self) {
                return RecordedOutcome(rawValue: state).map(RecordClaim.recorded) ?? .heldElsewhere
            }
            return .heldElsewhere  // finished and released between the two statements: the retry claims it
        }
    }

    func finish(_ key: RepeatKey, _ outcome: RecordedOutcome?, now: Date) async throws {
        try await bounded {
            let at = now.timeIntervalSince1970
            if let outcome {
                try await self.exec(
                    """
                    INSERT INTO herald_deliveries (key, state, expires_at) VALUES (\(key.digest), \(outcome.rawValue), \(at + self.window))
                    ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, expires_at = EXCLUDED.expires_at
                    """)
            } else {
                try await self.exec("DELETE FROM herald_deliveries WHERE key = \(key.digest) AND state = 'claimed'")
            }
            // Expired records go now and then, by whichever instance finishes the 256th delivery.
            if self.finishes.add(1) % 256 == 0 {
                try await self.exec("DELETE FROM herald_deliveries WHERE expires_at < \(at)")
            }
        }
    }

    /// `work` within the timeout, once the table exists; its outcome is the store's health.
    private func bounded<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await tracker.track {
            // The table is made on first use, within the same bound: a notify never waits longer
            // for the record than `repeat_store_timeout`, even while PostgreSQL is down.
            if ready.value == nil { try await PostgresDeadline.bounded(timeout) { try await self.migrated() } }
            return try await PostgresDeadline.bounded(timeout, work)
        }
    }

    /// Creates the table on first use (one instance at a time, under an advisory lock).
    private func migrated() async throws {
        if ready.value != nil { return }
        guard !migrating.exchange(true, ordering: .acquiringAndReleasing) else { return try await ready.wait() }
        do {
            try await client.withConnection { connection in
                _ = try await connection.query("BEGIN", logger: Self.logger)
                _ = try await connection.query("SELECT pg_advisory_xact_lock(4242004)", logger: Self.logger)
                _ = try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS herald_deliveries (
                        key TEXT PRIMARY KEY, state TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                    """, logger: Self.logger)
                _ = try await connection.query("COMMIT", logger: Self.logger)
            }
            ready.open(())
        } catch {
            migrating.store(false, ordering: .releasing)
            throw error
        }
    }

    private func exec(_ query: PostgresQuery) async throws {
        for try await _ in try await client.query(query, logger: Self.logger) {}
    }
}
