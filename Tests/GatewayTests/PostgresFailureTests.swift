import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing
import _ConnectionPoolModule

/// What a PostgreSQL store's failure says (`PostgresFailure`), on a real PostgreSQL: what the
/// server refused, its message only where it names objects, never a value; a client's failure by
/// its code and the connection's error.
@Suite struct PostgresFailureTests {
    static let logger = Logger(label: "test")

    /// The failures of `statements`, each run through a store's bound on a database of its own.
    static func failures(_ statements: [PostgresQuery]) async throws -> [String] {
        let url = try await TestPostgres.createDatabase(prefix: "herald_failure")
        let (configuration, connection) = try PostgresURL.configurations(url, maxConnections: 2)
        let client = PostgresClient(configuration: configuration, backgroundLogger: Self.logger)
        let health = ComponentHealth(name: "store", clock: SystemClock())
        let bound = PostgresStoreBound(connection: connection, pool: nil, timeout: .seconds(30), clock: EventLoopClock(), tracker: health)
        return await withTaskGroup(of: Void.self) { group in
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

    /// A database the URL names but the server does not have: PostgresNIO's pool tries again
    /// without saying why, and the operation ends at the store's timeout; the probe of the silent
    /// store, on a connection of its own, says why in `/health`, with the fix.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aMissingDatabaseIsNamedByTheProbe() async throws {
        let url = try #require(TestPostgres.missingDatabase)
        let clock = ManualClock()
        let (configuration, connection) = try PostgresURL.configurations(url, maxConnections: 1)
        let client = PostgresClient(configuration: configuration, backgroundLogger: Self.logger)
        let health = ComponentHealth(name: "store", clock: clock)
        let timeout = Duration.seconds(5)
        let bound = PostgresStoreBound(connection: connection, pool: nil, timeout: timeout, clock: clock.loopClock, tracker: health)
        func select() async -> String {
            do {
                try await bound.run { for try await _ in try await client.query("SELECT 1", logger: Self.logger) {} }
                return "no failure"
            } catch {
                return "\(error)"
            }
        }
        let (first, afterTimeout, probed) = await withTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            async let first = select()
            let armed = await eventually { clock.loopTimers(dueIn: timeout) >= 1 }
            clock.advance(by: timeout)
            let failure = await first
            let afterTimeout = health.problem?.error
            clock.advance(by: ComponentHealth.probeInterval)
            _ = await select()  // skipped; starts the probe
            let probed = await eventually { health.problem?.error.contains("3D000") == true }
            group.cancelAll()
            #expect(armed)
            return (failure, afterTimeout, probed)
        }
        #expect(first == "the PostgreSQL store did not answer in time")
        #expect(afterTimeout == first)
        #expect(probed, "\(health.problem?.error ?? "healthy")")
        let said = health.problem?.error ?? ""
        #expect(said.contains(#"database "herald_never_created" does not exist"#), "\(said)")
        #expect(said.contains("create it"), "\(said)")
    }

    /// A database the URL names but the server does not have is named by the check at start,
    /// before any operation, and the store is silent at once: the first operation is not tried
    /// (through the pool it would wait its whole timeout, "did not answer in time").
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aMissingDatabaseIsNamedAtStartAndTheFirstOperationDoesNotWaitForIt() async throws {
        let url = try #require(TestPostgres.missingDatabase)
        let (_, connection) = try PostgresURL.configurations(url, maxConnections: 1)
        let clock = ManualClock()
        let health = ComponentHealth(name: "store", clock: clock)
        let bound = PostgresStoreBound(connection: connection, pool: nil, timeout: .seconds(5), clock: clock.loopClock, tracker: health)
        let error = await bound.checkAtStart().map { "\($0)" } ?? "no failure"
        #expect(error.contains(#"SQLSTATE 3D000: database "herald_never_created" does not exist"#), "\(error)")
        #expect(health.problem?.error == error)
        await #expect(throws: ComponentHealth.Skipped.self) { try await bound.run { "tried" } }
    }

    /// The pool's line on each failed connection attempt goes to `debug`; every other line of
    /// the pool keeps its level, and at `debug` the attempt's line is written too.
    @Test func thePoolsLineOnEachFailedAttemptIsDebug() {
        let capture = LogCapture()
        let atInfo = PostgresPoolLog.logger(capture.logger(level: .info))
        atInfo.info("\(PostgresPoolLog.connectFailed)")
        atInfo.info("Something else")
        atInfo.warning("Trying to lease connection")
        var atDebug = atInfo
        atDebug.logLevel = .debug
        atDebug.info("\(PostgresPoolLog.connectFailed)")
        #expect(
            capture.lines == [
                "info Something else", "warning Trying to lease connection", "debug \(PostgresPoolLog.connectFailed)",
            ])
    }

    /// After 15 s in which it made no connection and has none open, PostgresNIO's pool fails every
    /// operation at once, with an error that names a type: it is said in words, and it makes the
    /// store silent, so that its probe, on a connection of its own, says why (a refused
    /// connection, a missing database) and the uses are skipped until the database answers.
    @Test func aPoolThatGaveUpConnectingIsSaidInWordsAndMakesTheStoreSilent() async throws {
        let error = ConnectionPoolError.connectionCreationCircuitBreakerTripped
        let failure = try #require(PostgresFailure(error))
        #expect(failure.description.hasPrefix("PostgreSQL has accepted no connection for a minute or more"), "\(failure)")
        #expect(PostgresDeadline.isSilence(error) && PostgresDeadline.isSilence(failure))
        #expect(PostgresFailure(ConnectionPoolError.poolShutdown) == nil)
        let (_, connection) = try PostgresURL.configurations("postgres://herald@127.0.0.1:1/none", maxConnections: 1)
        let health = ComponentHealth(name: "store", clock: ManualClock())
        let bound = PostgresStoreBound(
            connection: connection, pool: nil, timeout: .seconds(5), clock: ManualClock().loopClock, tracker: health)
        await #expect(throws: PostgresFailure.self) { try await bound.run { () async throws -> Int in throw error } }
        #expect(health.isSilent)
        #expect(health.problem?.error == failure.description)
        await #expect(throws: ComponentHealth.Skipped.self) { try await bound.run { "tried" } }
    }
}
