import Foundation
import HeraldCore
import HeraldPostgres
import Logging
import Metrics
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The delivery record of a fleet (docs/operations.md, "Once"): one table in PostgreSQL, claimed
/// before the upstream call (`INSERT … ON CONFLICT`), recorded after the answer, and the fleet's
/// delivery traces in the same rows. A notify's devices are claimed in one statement and finished
/// in one more, after its answer was written, with whether its sender heard it; the statements of
/// concurrent notifies are joined (`Batcher`: each a group commit of whatever came meanwhile),
/// so that under load a notify costs a fraction of a round trip. Expired rows are swept by a
/// service of their own (`sweeper`), never inside a notify.
/// Two instances given the same notify send once between them; a claim whose instance died is
/// taken over after `repeat_takeover`. Every operation is bounded by `repeat_store_timeout`; one
/// that fails makes the caller use its memory record instead (`RepeatGuard`), and `/health` says so.
final class PostgresDeliveryRecords: DeliveryRecords {
    /// Its connections, renewed after PostgreSQL was unreachable long enough for the pool to give up.
    let pool: PostgresPool
    let window: TimeInterval
    let takeover: TimeInterval
    let timeout: Duration
    let tracker: ComponentHealth
    /// Every operation's bound and health.
    private let bound: PostgresStoreBound
    let clock: any HeraldClock
    private let ready = ReadinessGate<Void>()
    private let migrating = Atomic(false)
    static let logger = Logger(label: "herald.notify.repeats")
    /// The claims and finishes of concurrent notifies, each kind joined into one statement at a
    /// time per eight of the pool's connections (`RecordSettings.statementsAtOnce`): one of each
    /// at the default size, as a database's log writer commits whatever came meanwhile. Each
    /// statement runs within `repeat_store_timeout` (one task and timer a statement, not one a
    /// notify); one that misses it fails the notifies queued behind it as well, which then use
    /// their memory record at once.
    private let claims: Batcher<ClaimRow, RecordClaim>
    private let finishes: Batcher<FinishRow, Void>
    /// The statements its claims and finishes made (a notify's cost, for tests and
    /// docs/operations.md's "Once").
    let statements = AtomicCounter()
    /// How often expired rows are deleted.
    static let sweepInterval = Duration.seconds(60)

    /// A claim as the statement takes it: the key's digest, its trace's strings ("" for none),
    /// and the claim's times.
    struct ClaimRow: Sendable {
        var key: String
        var eventId = ""
        var frontEnd = ""
        var appId = ""
        var device = ""
        var pushkey = ""
        var instance: String
        var at: Double
    }

    /// A finish as the statement takes it.
    struct FinishRow: Sendable {
        var key: String
        /// A recorded outcome, or `failed` / `held` for a released claim.
        var state: String
        var recorded: Bool
        var reason = ""
        var detail = ""
        var attempts = 0
        var providerId = ""
        var target = ""
        var heard: Bool
        var at: Double
    }

    init(url: String, notify: RecordSettings, metrics: any MetricsFactory, clock: any HeraldClock) throws {
        let configurations = try PostgresURL.configurations(url, maxConnections: notify.repeatStoreMaxConnections)
        var configuration = configurations.client
        // The connections the batches' statements use at once stay open, without a keep-alive
        // query or an idle timer: the pool would otherwise start a timer task on each release of a
        // connection and cancel it on the next lease, twice a statement ("The PostgreSQL record",
        // docs/operations.md). A connection that dies is seen at its next statement, which then
        // fails within `repeat_store_timeout` as any silent one does.
        configuration.options.keepAliveBehavior = nil
        configuration.options.minimumConnections = notify.connectionsKeptOpen
        pool = PostgresPool(configuration: configuration, logger: Self.logger)
        window = notify.repeatWindow.seconds
        takeover = notify.repeatTakeover.seconds
        timeout = notify.repeatStoreTimeout
        tracker = ComponentHealth(name: "repeat_store", metrics: metrics, clock: clock, logger: Self.logger)
        bound = PostgresStoreBound(
            connection: configurations.connection, pool: pool, timeout: timeout, clock: clock.loopClock, tracker: tracker)
        self.clock = clock
        let pool = pool
        let (window, takeover, statements, timeout, loopClock) = (window, takeover, statements, timeout, clock.loopClock)
        claims = Batcher(concurrency: notify.statementsAtOnce, failsQueue: PostgresDeadline.isSilence) { rows in
            statements.add(1)
            return try await PostgresDeadline.bounded(timeout, clock: loopClock, on: PostgresLoop.loop) {
                try await Self.claim(rows, client: pool.client, takeover: takeover, window: window)
            }
        }
        finishes = Batcher(concurrency: notify.statementsAtOnce, failsQueue: PostgresDeadline.isSilence) { rows in
            statements.add(1)
            try await PostgresDeadline.bounded(timeout, clock: loopClock, on: PostgresLoop.loop) {
                try await Self.finish(rows, client: pool.client, window: window)
            }
            return rows.map { _ in () }
        }
    }

    var health: ComponentHealth? { tracker }

    /// Its connection pool, the leader of the finishes handed over after answers, its check at
    /// start and its sweeper: services of the gateway's group. The leader comes after the pool, so
    /// that a graceful shutdown stops it first: it writes the finishes handed to it before the pool
    /// closes. It runs on one of the server's loops, not on the stores' loop where the statements'
    /// answers are read: it takes the next batch once that loop's work in hand is done, by when
    /// more finishes have come, so a statement under load carries more of them (docs/operations.md,
    /// "The work after answers handed to the record (stop 79)").
    var services: [any Service] {
        let leader = finishes.leader(on: EventLoopTaskExecutor(MultiThreadedEventLoopGroup.singleton.next()))
        return [pool, leader, PostgresStartCheck(bound: bound), Sweeper(records: self)]
    }

    func claim(_ requests: [RecordClaimRequest], instance: String, now: Date) async throws -> [RecordClaim] {
        let at = now.timeIntervalSince1970
        let rows = requests.map { request in
            var row = ClaimRow(key: request.key.digest, instance: instance, at: at)
            if let trace = request.trace {
                row.eventId = trace.eventId
                row.frontEnd = trace.frontEnd
                row.appId = trace.appId
                row.device = Self.device(trace.pushkey)
                row.pushkey = Redaction.pushkey(trace.pushkey)
            }
            return row
        }
        return try await batched { try await self.claims.run(rows) }
    }

    /// One statement for every claim of `rows` (their keys are unique: an instance claims a key
    /// once at a time, `RepeatGuard`). The row as it was (the statement's snapshot) says what a
    /// claim found: none, a record that ran out (or was heard, or failed), or a claim that ran
    /// out, which is a takeover; a row that is neither claimed nor was there is a claim another
    /// instance made meanwhile (held elsewhere: the retry is answered). The trace starts anew
    /// with the claim. The rows go in the order of their keys, so that two instances' statements
    /// lock rows in the same order. The statement is the function `herald_claim_v1`
    /// (`PostgresRecordSchema.claim`), one call.
    static func claim(_ rows: [ClaimRow], client: PostgresClient, takeover: Double, window: Double) async throws -> [RecordClaim] {
        var seen = Set<String>()
        let unique = rows.indices.filter { seen.insert(rows[$0].key).inserted }
        let batch = unique.map { rows[$0] }
        let answers = try await client.query(
            """
            SELECT * FROM herald_claim_v1(\(batch.map(\.key)), \(batch.map(\.eventId)), \(batch.map(\.frontEnd)), \(batch.map(\.appId)),
                \(batch.map(\.device)), \(batch.map(\.pushkey)), \(batch.map(\.instance)), \(batch.map(\.at)), \(takeover),
                \(max(window, takeover)))
            """, logger: logger)
        var found = [RecordClaim](repeating: .heldElsewhere, count: rows.count)
        for try await (n, claimed, state) in answers.decode((Int, Bool, String?).self) {
            guard n >= 1, n <= unique.count else { continue }
            found[unique[n - 1]] =
                claimed
                ? (state == "claimed" ? .takenOver : .claimed)
                : state.flatMap(RecordedOutcome.init(rawValue:)).map(RecordClaim.recorded) ?? .heldElsewhere
        }
        return found
    }

    func finish(_ items: [RecordFinish], heard: Bool, now: Date) async throws {
        let rows = Self.rows(items, heard: heard, now: now)
        try await batched { _ = try await self.finishes.run(rows) }
    }

    /// The finishes as the statement takes them.
    private static func rows(_ items: [RecordFinish], heard: Bool, now: Date) -> [FinishRow] {
        let at = now.timeIntervalSince1970
        return items.map { item in
            let reason = item.trace?.outcome.reason
            return FinishRow(
                key: item.key.digest, state: item.outcome?.rawValue ?? (item.trace?.state == .held ? "held" : "failed"),
                recorded: item.outcome != nil, reason: reason?.label ?? "", detail: reason.map(String.init(describing:)) ?? "",
                attempts: item.trace?.note.attempts ?? 0, providerId: item.trace?.note.providerId ?? "",
                target: item.trace?.note.target ?? "", heard: heard, at: at)
        }
    }

    /// A finish came before any claim had made the record's table: every claim so far fell back
    /// to memory (the database was unreachable from the start), so no row waits for it here.
    struct NotSetUp: Error, CustomStringConvertible {
        var description: String { "the PostgreSQL record is not set up yet (no claim has reached it)" }
    }

    /// The same statement, handed to the finishes' leader (`services`) instead of waited for.
    func finish(_ items: [RecordFinish], heard: Bool, now: Date, landed: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let use: ComponentHealth.Use
        do {
            // The claims made the table: a finish follows its claim.
            guard ready.value != nil else { throw NotSetUp() }
            use = try bound.begin()
        } catch {
            return landed(.failure(error))
        }
        finishes.hand(Self.rows(items, heard: heard, now: now)) { [bound] result in
            landed(bound.end(use, result.map { _ in () }))
        }
    }

    /// One statement for every finish of `rows`: a recorded outcome is answered from until the
    /// window ends, or, heard, from no longer (its trace stays); a failure releases its claim at
    /// once (the retry really retries), its trace kept. One call of `herald_finish_v1`
    /// (`PostgresRecordSchema.finish`).
    static func finish(_ rows: [FinishRow], client: PostgresClient, window: Double) async throws {
        var seen = Set<String>()
        let batch = rows.filter { seen.insert($0.key).inserted }.sorted { $0.key < $1.key }
        for try await _ in try await client.query(
            """
            SELECT herald_finish_v1(\(batch.map(\.key)), \(batch.map(\.state)), \(batch.map(\.recorded)), \(batch.map(\.reason)),
                \(batch.map(\.detail)), \(batch.map(\.attempts)), \(batch.map(\.providerId)), \(batch.map(\.target)),
                \(batch.map(\.heard)), \(batch.map(\.at)), \(window))
            """, logger: logger)
        {}
    }

    /// Deletes the rows whose record and trace both ran out; bounded, and skipped while the
    /// store is silent, as every operation is.
    func sweep() async throws {
        let at = clock.date.timeIntervalSince1970
        try await bounded { try await self.exec("DELETE FROM herald_deliveries WHERE kept_until < \(at) AND expires_at < \(at)") }
    }

    /// Sweeps expired rows every `sweepInterval`, on the gateway's clock, until the shutdown.
    struct Sweeper: Service {
        let records: PostgresDeliveryRecords

        func run() async throws {
            while !Task.isCancelled {
                do {
                    try await cancelWhenGracefulShutdown { try await records.clock.wait(PostgresDeliveryRecords.sweepInterval) }
                } catch {
                    return
                }
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                try? await records.sweep()
            }
        }
    }

    func deliveries(_ query: DeliveryQuery, now: Date) async throws -> [TracedDelivery] {
        try await bounded {
            let at = now.timeIntervalSince1970
            let device = query.pushkey.map(Self.device)
            // The newest thousand, oldest first (an event's, or a device's across its events).
            let rows = try await self.pool.client.query(
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
                in rows.decode(
                    (String, String?, String, String, String, String?, String?, Double, Double?, Int, String, String?, String?).self)
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

    /// A claim's or a finish's `work`, whose statement the batcher bounds, once the table exists
    /// (made within the bound on first use); its outcome is the store's health.
    private func batched<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        guard ready.value == nil else { return try await bound.tracked(work) }
        return try await bound.run(prepare: { try await self.migrated() }, work)
    }

    /// `work` within the timeout, once the table exists; its outcome is the store's health.
    private func bounded<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        // A record that missed its deadline is skipped (memory stands in at once) but for one probe
        // at a time. The table is made on first use, within the same bound: a notify never waits
        // longer for the record than `repeat_store_timeout`, even while PostgreSQL is down.
        guard ready.value == nil else { return try await bound.run(work) }
        return try await bound.run(prepare: { try await self.migrated() }, work)
    }

    /// Creates the table and its functions on first use (one instance at a time, under an advisory
    /// lock; `PostgresRecordSchema`).
    private func migrated() async throws {
        if ready.value != nil { return }
        guard !migrating.exchange(true, ordering: .acquiringAndReleasing) else { return try await ready.wait() }
        do {
            try await PostgresMigration.run(
                pool.client, lock: PostgresRecordSchema.lock, PostgresRecordSchema.statements, within: timeout, clock: clock.loopClock,
                logger: Self.logger)
            ready.open(())
        } catch {
            migrating.store(false, ordering: .releasing)
            throw error
        }
    }

    private func exec(_ query: PostgresQuery) async throws {
        for try await _ in try await pool.client.query(query, logger: Self.logger) {}
    }
}
