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
            // Both have a connection the server answered on before it hung.
            #expect(try await quick.registration(publicKey: [1], installationId: "a") == nil)
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
}
