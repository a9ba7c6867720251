package import Foundation
import GRDB

extension SQLiteStatusStore {
    static func registerGorushQueue(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2-gorush-queue") { db in
            try db.execute(
                sql: """
                    CREATE TABLE gorush_queue (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        body BLOB NOT NULL,
                        size INTEGER NOT NULL,
                        claimed_until REAL NOT NULL DEFAULT 0
                    );
                    CREATE INDEX gorush_queue_claim ON gorush_queue (claimed_until, id);
                    """)
        }
    }

    package func enqueueGorush(_ bodies: [[UInt8]], maxJobs: Int, maxBytes: Int) async throws -> Bool {
        let bytes = bodies.reduce(0) { $0 + $1.count }
        return try await pool.write { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*) AS jobs, COALESCE(SUM(size), 0) AS bytes FROM gorush_queue")
            let queuedJobs: Int = row?["jobs"] ?? 0
            let queuedBytes: Int = row?["bytes"] ?? 0
            guard queuedJobs + bodies.count <= maxJobs, queuedBytes + bytes <= maxBytes else { return false }
            for body in bodies {
                try db.execute(sql: "INSERT INTO gorush_queue (body, size) VALUES (?, ?)", arguments: [Data(body), body.count])
            }
            return true
        }
    }

    package func claimGorush(limit: Int, now: Date, until: Date) async throws -> [QueuedGorushJob] {
        try await pool.write { db in
            try Row.fetchAll(
                db,
                sql: """
                    UPDATE gorush_queue SET claimed_until = ?
                    WHERE id IN (SELECT id FROM gorush_queue WHERE claimed_until <= ? ORDER BY id LIMIT ?)
                    RETURNING id, body
                    """, arguments: [until.timeIntervalSince1970, now.timeIntervalSince1970, limit]
            )
            .map { QueuedGorushJob(id: $0["id"], body: [UInt8]($0["body"] as Data)) }
            .sorted { $0.id < $1.id }
        }
    }

    package func completeGorush(id: Int64) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM gorush_queue WHERE id = ?", arguments: [id]) }
    }

    package func recoverGorushClaims() async throws {
        try await pool.write { db in try db.execute(sql: "UPDATE gorush_queue SET claimed_until = 0 WHERE claimed_until > 0") }
    }

    package func gorushQueueDepth() async throws -> (jobs: Int, bytes: Int) {
        try await pool.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*) AS jobs, COALESCE(SUM(size), 0) AS bytes FROM gorush_queue")
            return (row?["jobs"] ?? 0, row?["bytes"] ?? 0)
        }
    }
}
