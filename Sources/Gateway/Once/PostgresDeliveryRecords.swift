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
/// before the upstream call (`INSERT … ON CONFLICT`), recorded after it, expired by the window,
/// and the fleet's delivery traces in the same rows (one statement each way, as before).
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

    func claim(_ key: RepeatKey, trace: TraceStart?, instance: String, now: Date) async throws -> RecordClaim {
        try await bounded {
            let at = now.timeIntervalSince1970
            let kept = at + max(self.window, self.takeover)
            // The row as it was (the statement's snapshot): none, a record that ran out (or was
            // heard, or failed), or a claim that ran out, which is a takeover. The trace starts
            // anew with the claim.
            let claimed = try await self.client.query(
                """
                WITH before AS (SELECT state FROM herald_deliveries WHERE key = \(key.digest))
                INSERT INTO herald_deliveries (key, state, expires_at, event_id, front_end, app_id, device, pushkey, started_at, instance, kept_until)
                VALUES (\(key.digest), 'claimed', \(at + self.takeover), \(trace?.eventId), \(trace?.frontEnd), \(trace?.appId),
                    \(trace.map { Self.device($0.pushkey) }), \(trace.map { Redaction.pushkey($0.pushkey) }), \(at), \(instance), \(kept))
                ON CONFLICT (key) DO UPDATE SET state = 'claimed', expires_at = EXCLUDED.expires_at,
                    event_id = EXCLUDED.event_id, front_end = EXCLUDED.front_end, app_id = EXCLUDED.app_id, device = EXCLUDED.device, pushkey = EXCLUDED.pushkey,
                    started_at = EXCLUDED.started_at, instance = EXCLUDED.instance, kept_until = EXCLUDED.kept_until,
                    reason = NULL, detail = NULL, finished_at = NULL, attempts = 0, provider_id = NULL
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

    func finish(_ key: RepeatKey, _ outcome: RecordedOutcome?, trace end: TraceEnd?, now: Date) async throws {
        try await bounded {
            let at = now.timeIntervalSince1970
            let reason = end?.outcome.reason
            let (label, detail) = (reason?.label, reason.map(String.init(describing:)))
            let (attempts, providerId, target) = (end?.note.attempts ?? 0, end?.note.providerId, end?.note.target)
            if let outcome {
                try await self.exec(
                    """
                    INSERT INTO herald_deliveries (key, state, expires_at, kept_until) VALUES (\(key.digest), \(outcome.rawValue), \(at + self.window), \(at + self.window))
                    ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, expires_at = EXCLUDED.expires_at, kept_until = EXCLUDED.kept_until,
                        reason = \(label), detail = \(detail), finished_at = \(at), attempts = \(attempts), provider_id = \(providerId),
                        target = \(target)
                    """)
            } else {
                // Failed: claimable at once (the retry really retries), its trace kept.
                let state = end?.state == .held ? "held" : "failed"
                try await self.exec(
                    """
                    UPDATE herald_deliveries SET state = \(state), expires_at = 0, reason = \(label), detail = \(detail),
                        finished_at = \(at), attempts = \(attempts), provider_id = \(providerId), target = \(target)
                    WHERE key = \(key.digest) AND state = 'claimed'
                    """)
            }
            // Expired rows go now and then, by whichever instance finishes the 256th delivery.
            if self.finishes.add(1) % 256 == 0 {
                try await self.exec("DELETE FROM herald_deliveries WHERE kept_until < \(at) AND expires_at < \(at)")
            }
        }
    }

    func heard(_ keys: [RepeatKey], now: Date) async throws {
        try await bounded {
            let at = now.timeIntervalSince1970
            try await self.exec(
                """
                UPDATE herald_deliveries SET expires_at = \(at)
                WHERE key = ANY(\(keys.map(\.digest))) AND state <> 'claimed' AND expires_at > \(at)
                """)
        }
    }

    func deliveries(_ query: DeliveryQuery, now: Date) async throws -> [TracedDelivery] {
        try await bounded {
            let at = now.timeIntervalSince1970
            let device = query.pushkey.map(Self.device)
            // The newest thousand, oldest first (an event's, or a device's across its events).
            let rows = try await self.client.query(
                """
                SELECT event_id, front_end, state, app_id, pushkey, reason, detail, started_at, finished_at, attempts, instance,
                    provider_id, target
                FROM herald_deliveries
                WHERE (\(query.eventId)::TEXT IS NULL OR event_id = \(query.eventId)) AND event_id IS NOT NULL AND kept_until > \(at)
                    AND (\(device)::TEXT IS NULL OR device = \(device)) AND (\(query.appId)::TEXT IS NULL OR app_id = \(query.appId))
                ORDER BY started_at DESC LIMIT 1000
                """, logger: Self.logger)
            var found: [TracedDelivery] = []
            for try await (event, frontEnd, state, app, pushkey, reason, detail, started, finished, attempts, instance, providerId, target)
                in rows.decode((String, String?, String, String, String, String?, String?, Double, Double?, Int, String, String?, String?).self)
            {
                found.append(
                    TracedDelivery(
                        eventId: event, frontEnd: frontEnd ?? TraceStart.matrix, appId: app, pushkey: pushkey,
                        state: state == "claimed" ? .inFlight : TracedDelivery.State(rawValue: state) ?? .failed, reason: reason,
                        detail: detail, startedAt: Date(timeIntervalSince1970: started),
                        finishedAt: finished.map { Date(timeIntervalSince1970: $0) }, attempts: attempts, instance: instance,
                        providerId: providerId, target: target))
            }
            return found.reversed()
        }
    }

    func trace(_ start: TraceStart, _ end: TraceEnd, startedAt: Date, instance: String, now: Date) async throws {
        try await bounded {
            let at = now.timeIntervalSince1970
            let reason = end.outcome.reason
            // A row of its own, never a record (`expires_at` 0: no claim finds it answered), kept as
            // long as the record's traces; a second trace of the same delivery replaces it.
            let key = RepeatKey(["trace", start.frontEnd, start.eventId, start.appId, start.pushkey]).digest
            try await self.exec(
                """
                INSERT INTO herald_deliveries (key, state, expires_at, event_id, front_end, app_id, device, pushkey, started_at,
                    instance, kept_until, reason, detail, finished_at, attempts, provider_id, target)
                VALUES (\(key), \(end.state.rawValue), 0, \(start.eventId), \(start.frontEnd), \(start.appId), \(Self.device(start.pushkey)),
                    \(Redaction.pushkey(start.pushkey)), \(startedAt.timeIntervalSince1970), \(instance), \(at + max(self.window, self.takeover)),
                    \(reason?.label), \(reason.map(String.init(describing:))), \(at), \(end.note.attempts), \(end.note.providerId),
                    \(end.note.target))
                ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, started_at = EXCLUDED.started_at, instance = EXCLUDED.instance,
                    kept_until = EXCLUDED.kept_until, reason = EXCLUDED.reason, detail = EXCLUDED.detail,
                    finished_at = EXCLUDED.finished_at, attempts = EXCLUDED.attempts, provider_id = EXCLUDED.provider_id,
                    target = EXCLUDED.target
                """)
        }
    }

    /// What the table keeps of a pushkey to find its deliveries by: a digest, never the key.
    static func device(_ pushkey: String) -> String { RepeatKey(["device", pushkey]).digest }

    /// `work` within the timeout, once the table exists; its outcome is the store's health.
    private func bounded<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        // A record that missed its deadline is skipped (memory stands in at once) but for one probe
        // at a time: a silent database costs the notifies one timeout, not one each.
        try await tracker.track(
            {
                // The table is made on first use, within the same bound: a notify never waits longer
                // for the record than `repeat_store_timeout`, even while PostgreSQL is down.
                if ready.value == nil { try await PostgresDeadline.bounded(timeout) { try await self.migrated() } }
                return try await PostgresDeadline.bounded(timeout, work)
            }, isSilence: PostgresDeadline.isSilence, probe: PostgresDeadline.probe(client, within: timeout))
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
                // The trace's columns (docs/operations.md, "Why didn't my phone ring?"), added to
                // a table an earlier version made.
                _ = try await connection.query(
                    """
                    ALTER TABLE herald_deliveries
                        ADD COLUMN IF NOT EXISTS event_id TEXT, ADD COLUMN IF NOT EXISTS app_id TEXT,
                        ADD COLUMN IF NOT EXISTS device TEXT, ADD COLUMN IF NOT EXISTS pushkey TEXT,
                        ADD COLUMN IF NOT EXISTS reason TEXT, ADD COLUMN IF NOT EXISTS detail TEXT,
                        ADD COLUMN IF NOT EXISTS started_at DOUBLE PRECISION, ADD COLUMN IF NOT EXISTS finished_at DOUBLE PRECISION,
                        ADD COLUMN IF NOT EXISTS attempts INTEGER NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS instance TEXT,
                        ADD COLUMN IF NOT EXISTS provider_id TEXT, ADD COLUMN IF NOT EXISTS kept_until DOUBLE PRECISION NOT NULL DEFAULT 0,
                        ADD COLUMN IF NOT EXISTS target TEXT, ADD COLUMN IF NOT EXISTS front_end TEXT
                    """, logger: Self.logger)
                _ = try await connection.query(
                    "CREATE INDEX IF NOT EXISTS herald_deliveries_event ON herald_deliveries (event_id)", logger: Self.logger)
                // A device's deliveries across events (`herald trace --pushkey`).
                _ = try await connection.query(
                    "CREATE INDEX IF NOT EXISTS herald_deliveries_device ON herald_deliveries (device)", logger: Self.logger)
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
