package import HeraldCore
import Logging
package import PostgresNIO

/// A store's tables made or brought up to date, one instance at a time across a fleet: the
/// statements run in one transaction under a transaction-scoped advisory lock (`lock`, one number
/// per store). Each statement waits through `PostgresDeadline.rows`, `within` its bound on `clock`
/// (nil: as long as a database that is down takes to come back), and ends at once when the caller
/// is cancelled: a query that never answers must not hold a shutdown. On any failure the transaction
/// is rolled back; a connection whose rollback was cut short too is closed rather than given back
/// to the pool. `after` runs on the same connection once the transaction committed.
package enum PostgresMigration {
    package static func run(
        _ client: PostgresClient, lock: Int64, _ statements: [PostgresQuery], within limit: Duration?, clock: any LoopClock,
        logger: Logger,
        after: @Sendable (PostgresConnection) async throws -> Void = { _ in }
    ) async throws {
        try await client.withConnection { connection in
            func exec(_ query: PostgresQuery) async throws {
                _ = try await PostgresDeadline.rows(connection, query, within: limit, clock: clock, logger: logger)
            }
            try await exec("BEGIN")
            do {
                try await exec("SELECT pg_advisory_xact_lock(\(lock))")
                for statement in statements { try await exec(statement) }
                try await exec("COMMIT")
            } catch {
                if (try? await exec("ROLLBACK")) == nil { try? await connection.close() }
                throw error
            }
            try await after(connection)
        }
    }
}
