import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing

/// What a PostgreSQL store's failure says (`PostgresFailure`), on a real PostgreSQL: what the
/// server refused, its message only where it names objects, never a value; a client's failure by
/// its code and the connection's error.
@Suite struct PostgresFailureTests {
    static let logger = Logger(label: "test")

    /// The failures of `statements`, each run through a store's bound on a database of its own.
    static func failures(_ statements: [PostgresQuery]) async throws -> [String] {
        let url = try await TestPostgres.createDatabase(prefix: "herald_failure")
        let client = PostgresClient(configuration: try PostgresURL.configuration(url, maxConnections: 2), backgroundLogger: Self.logger)
        let health = ComponentHealth(name: "store", clock: SystemClock())
        let bound = PostgresStoreBound(client: client, timeout: .seconds(30), clock: EventLoopClock(), tracker: health)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            var said: [String] = []
            for statement in statements {
                do {
                    try await bound.run { for try await _ in try await client.query(statement, logger: Self.logger) {} }
                    said.append("no failure")
                } catch {
                    said.append("\(error)")
                }
            }
            said.append(health.problem?.error ?? "healthy")
            group.cancelAll()
            return said
        }
    }

    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aRefusalIsNamedByItsCodeAndADataErrorNeverQuotesItsValue() async throws {
        let said = try await Self.failures(["SELECT 'secret-token-value'::int", "SELECT * FROM herald_no_such_table"])
        #expect(said[0] == "PostgreSQL refused (SQLSTATE 22P02)", "\(said)")
        #expect(said[1] == #"PostgreSQL refused (SQLSTATE 42P01: relation "herald_no_such_table" does not exist)"#, "\(said)")
        #expect(said.last == said[1], "\(said)")  // /health's latest error, the same text
        #expect(!said.joined().contains("secret-token-value"))
        #expect(!said.joined().contains("Generic description"))
    }
}
