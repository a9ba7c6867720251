import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing

/// A store's pool after a long outage (`PostgresPool`), on a PostgreSQL of the test's own that it
/// crashes and starts again. PostgresNIO's pool gives up after a minute without a connection (on
/// its own clock: this test takes that long) and then connects again only at its own pace, backing
/// off up to a minute apart; the store renews it once its probe finds the database answering.
@Suite struct PostgresPoolTests {
    @Test(.enabled(if: ThrowawayPostgres.available, "needs root and PostgreSQL's server binaries"))
    func aPoolThatGaveUpIsRenewedOnceTheDatabaseAnswersAgain() async throws {
        let server = try ThrowawayPostgres.start()
        defer { server.stop() }
        var (configuration, connection) = try PostgresURL.configurations(server.url, maxConnections: 2)
        // As the delivery record keeps its connections: open, without keep-alive queries.
        configuration.options.minimumConnections = 1
        configuration.options.keepAliveBehavior = nil
        let log = LogCapture()
        let pool = PostgresPool(configuration: configuration, logger: log.logger(level: .notice))
        let clock = ManualClock()
        let health = ComponentHealth(name: "store", clock: clock)
        let bound = PostgresStoreBound(
            connection: connection, pool: pool, timeout: .seconds(10), clock: EventLoopClock(), tracker: health)
        @Sendable func select() async -> String {
            do {
                try await bound.run { for try await _ in try await pool.client.query("SELECT 1", logger: Logger(label: "test")) {} }
                return "answered"
            } catch {
                return "\(error)"
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            #expect(await select() == "answered")
            try server.crash()
            // A query waits while the pool's attempts fail, and fails at once when it gives up (one
            // sent on the connection the crash ended fails first).
            var failures: [String] = []
            while failures.count < 5 {
                do {
                    for try await _ in try await pool.client.query("SELECT 1", logger: Logger(label: "test")) {}
                    failures.append("answered")
                } catch {
                    if PostgresFailure.isCircuitBroken(error) { break }
                    failures.append("\(error)")
                }
            }
            #expect(failures.count < 5, "\(failures)")
            try server.restart()
            // The store's first use finds the pool's refusal (unless one of the pool's own
            // attempts connected in the moment since the restart): the store is silent, and its
            // probe, a probe interval later, finds the database answering.
            let first = await select()
            #expect(first == "answered" || first.contains("accepted no connection"), "\(first)")
            clock.advance(by: ComponentHealth.probeInterval)
            _ = await select()  // skipped; it starts the probe
            #expect(await eventually { health.problem == nil }, "\(health.problem?.error ?? "")")
            // Used at once, on a new pool: the old one would have connected again only at its own
            // next attempt, seconds away.
            #expect(await select() == "answered")
            if first != "answered" {
                #expect(pool.renewals == 1)
                #expect(log.lines.filter { $0.contains("a new pool takes its place") }.count == 1, "\(log.lines)")
            }
            group.cancelAll()
        }
    }
}
