package import Foundation
import NIOCore
import PostgresNIO

extension PostgresStatusStore {
    static let gorushQueueSchema: [PostgresQuery] = [
        """
        CREATE TABLE IF NOT EXISTS gorush_queue (
            id BIGSERIAL PRIMARY KEY, body BYTEA NOT NULL, size INTEGER NOT NULL,
            claimed_until DOUBLE PRECISION NOT NULL DEFAULT 0)
        """,
        // Claims walk the primary key in id order and skip the few rows claimed, stopping after
        // `limit`: an index on (claimed_until, id) made the planner sort every unclaimed row first.
        "DROP INDEX IF EXISTS gorush_queue_claim",
    ]

    package func enqueueGorush(_ bodies: [[UInt8]], maxJobs: Int, maxBytes: Int) async throws -> Bool {
        guard !bodies.isEmpty else { return true }
        return try await bounded { [self] in try await insertGorush(bodies, maxJobs: maxJobs, maxBytes: maxBytes) }
    }

    /// A request waits for this: bounded by the store's timeout in `enqueueGorush`.
    ///
    /// The bound is checked against the queue's depth as the gorush workers last read it (at most a
    /// second ago, `gorushQueueDepth`) while that is far from it: below nine tenths of both limits
    /// the rows are simply inserted, and a queue known full is refused without a query. Only near
    /// the limits does an insert count the queue in its statement. Counting on every insert cost
    /// PostgreSQL a scan of the whole queue per request: with the queue full it saturated the
    /// database and delivery fell to about a hundred jobs a second (bench/fleet.sh).
    ///
    /// Each insert carries its deadline, four fifths of the store's timeout from now in the
    /// database's clock: a statement the database reads only later (it was stopped, or lost behind
    /// a failover, while the request waited, and Herald has answered 503) inserts nothing, so a
    /// batch answered "try again" is never also delivered (docs/operations.md, "A silent store").
    private func insertGorush(_ bodies: [[UInt8]], maxJobs: Int, maxBytes: Int) async throws -> Bool {
        let blobs = bodies.map { ByteBuffer(bytes: $0) }
        let cutoff = clock.date.timeIntervalSince1970 + timeout.seconds * 0.8 + databaseClockOffset.withLock { $0 }
        let bytes = Int64(bodies.reduce(0) { $0 + $1.count })
        switch queueDepth.admit(jobs: bodies.count, bytes: Int(bytes), maxJobs: maxJobs, maxBytes: maxBytes, now: clock.now) {
        case .full:
            return false
        case .roomy:
            let rows = try await client.query(
                """
                INSERT INTO gorush_queue (body, size)
                SELECT b, octet_length(b) FROM unnest(\(blobs)::bytea[]) WITH ORDINALITY AS t(b, n)
                WHERE extract(epoch FROM clock_timestamp()) < \(cutoff)
                ORDER BY n
                RETURNING id
                """, logger: Self.logger)
            var inserted = 0
            for try await _ in rows.decode(Int64.self) { inserted += 1 }
            return inserted == bodies.count
        case .count:
            break
        }
        // One statement: the bound is checked and the rows are written together, in request order.
        let rows = try await client.query(
            """
            INSERT INTO gorush_queue (body, size)
            SELECT b, octet_length(b) FROM unnest(\(blobs)::bytea[]) WITH ORDINALITY AS t(b, n)
            WHERE (SELECT count(*) + \(Int64(bodies.count)) <= \(Int64(maxJobs)) AND COALESCE(sum(size), 0) + \(bytes) <= \(Int64(maxBytes))
                   FROM gorush_queue)
              AND extract(epoch FROM clock_timestamp()) < \(cutoff)
            ORDER BY n
            RETURNING id
            """, logger: Self.logger)
        var inserted = 0
        for try await _ in rows.decode(Int64.self) { inserted += 1 }
        return inserted == bodies.count
    }

    package func claimGorush(limit: Int, now: Date, until: Date) async throws -> [QueuedGorushJob] {
        try await bounded { [self] in
            let rows = try await client.query(
                """
                UPDATE gorush_queue SET claimed_until = \(until.timeIntervalSince1970)
                WHERE id IN (
                    SELECT id FROM gorush_queue WHERE claimed_until <= \(now.timeIntervalSince1970)
                    ORDER BY id LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED)
                RETURNING id, body
                """, logger: Self.logger)
            var jobs: [QueuedGorushJob] = []
            for try await (id, body) in rows.decode((Int64, ByteBuffer).self) {
                jobs.append(QueuedGorushJob(id: id, body: Array(body.readableBytesView)))
            }
            return jobs.sorted { $0.id < $1.id }
        }
    }

    package func completeGorush(id: Int64) async throws {
        try await bounded { [self] in
            for try await _ in try await client.query("DELETE FROM gorush_queue WHERE id = \(id)", logger: Self.logger) {}
        }
    }

    /// Other instances may be working on their claims: they run out by themselves.
    package func recoverGorushClaims() async throws {}

    package func gorushQueueDepth() async throws -> (jobs: Int, bytes: Int) {
        try await bounded { [self] in
            let rows = try await client.query("SELECT count(*), COALESCE(sum(size), 0)::bigint FROM gorush_queue", logger: Self.logger)
            for try await (jobs, bytes) in rows.decode((Int64, Int64).self) {
                queueDepth.read(jobs: Int(jobs), bytes: Int(bytes), at: clock.now)
                return (Int(jobs), Int(bytes))
            }
            return (0, 0)
        }
    }
}
