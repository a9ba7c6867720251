import Foundation
import HeraldPostgres
import HeraldTestSupport
import Logging
import StatusAdapter
import Testing

/// A database that hangs (its processes stopped: connections open, nothing answered) bounds every
/// store operation: by the store's timeout, and at once when the operation's task is cancelled,
/// as a shutdown cancels it (docs/operations.md, "Shutdown").
@Suite(.serialized) struct HungDatabaseTests {
    @Test(
        .enabled(if: ThrowawayPostgres.available && TestPostgres.url != nil, "needs root and PostgreSQL's server"),
        .timeLimit(.minutes(1)))
    func aStoreOperationEndsAtItsTimeoutAndAtOnceWhenCancelled() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        var logger = Logger(label: "hung-database-test")
        logger.logLevel = .critical
        let quick = try PostgresStatusStore(url: postgres.url, logger: logger, timeout: .seconds(1))
        // Only a cancellation can end this one's operations within the test's time limit.
        let patient = try PostgresStatusStore(url: postgres.url, logger: logger, timeout: .seconds(600))
        try await withThrowingTaskGroup(of: Void.self) { services in
            for service in quick.services + patient.services { services.addTask { try await service.run() } }
            try await quick.migrate()
            // Both have a connection the server answered on before it hung. The quick one's first
            // connection may take longer than its second on a loaded machine: asked again then.
            var answered = false
            for _ in 0..<30 where !answered {
                do {
                    _ = try await quick.registration(publicKey: [1], installationId: "a")
                    answered = true
                } catch {}
            }
            #expect(answered)
            #expect(try await patient.registration(publicKey: [1], installationId: "a") == nil)
            try postgres.freeze()

            await #expect(throws: PostgresDeadline.Unavailable.self) {
                _ = try await quick.registration(publicKey: [1], installationId: "a")
            }
            let ended = await withTaskGroup(of: (any Error)?.self) { operation in
                operation.addTask {
                    do {
                        _ = try await patient.registration(publicKey: [1], installationId: "a")
                        return nil
                    } catch {
                        return error
                    }
                }
                operation.cancelAll()
                return await operation.next() ?? nil
            }
            #expect(ended is CancellationError, "\(String(describing: ended))")

            try postgres.thaw()
            services.cancelAll()
        }
    }

    /// An instance whose Status store hangs while it starts (it waits for the database, as it does
    /// for one that is down) ends on SIGTERM within the grace period and exits 0.
    @Test(
        .enabled(
            if: ThrowawayPostgres.available && TestPostgres.url != nil && StatusDurabilityTests.heraldBinary != nil,
            "needs root, PostgreSQL's server and the herald executable"))
    func anInstanceStartingOnAHungDatabaseEndsOnSIGTERM() async throws {
        let binary = try #require(StatusDurabilityTests.heraldBinary)
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let dir = temporaryDirectory()
        try postgres.freeze()
        let yaml =
            "log:\n  level: debug\n"
            + gatewayYAML(apps: webpushApp("com.example.webpush", directory: dir), extra: "status:\n  store: \(postgres.url)\n")
        try yaml.write(toFile: "\(dir)/herald.yaml", atomically: true, encoding: .utf8)
        let herald = try AdamantDurabilityTests.Herald.launch(binary, config: "\(dir)/herald.yaml", log: "\(dir)/herald.log")
        // The group runs (it traps SIGTERM before it starts a service); the Status store waits on the database.
        #expect(try await AdamantEndToEndTests.eventually { herald.output.contains("Starting service sl-service=") })
        await herald.expectCleanStop()
    }
}
