import HeraldTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import Gateway

/// docs/operations.md, "Shutdown": when the grace period ends, the log names the service that held
/// the shutdown up, those cancelled before their turn, and each one's end.
@Suite struct ShutdownWatchTests {
    /// Ignores the graceful shutdown; ends only when cancelled.
    struct Stubborn: Service {
        func run() async throws {
            let (never, _) = AsyncStream.makeStream(of: Int.self)
            for await _ in never {}
        }
    }

    /// Ends when asked; says when it runs.
    struct Polite: Service {
        let started: AsyncStream<Void>.Continuation
        func run() async throws {
            started.yield()
            try? await gracefulShutdown()
        }
    }

    /// Ends when asked, which happens only after `Stubborn` (it comes first in the group).
    struct Later: Service {
        func run() async throws { try? await gracefulShutdown() }
    }

    @Test func theServiceThatHeldTheShutdownUpIsNamedAndEachEndIsLogged() async throws {
        // Lines logged, as "LEVEL message service".
        let sink = LogCapture { event in event.metadata?["service"].map { "\(event.level) \(event.message) \($0)" } }
        let logger = sink.logger()
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        let services: [any Service] = [Later(), Stubborn(), Polite(started: starting)]
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: WatchedService($0, logger: logger)) }, logger: logger)
        configuration.maximumGracefulShutdownDuration = .milliseconds(200)
        configuration.maximumCancellationDuration = .seconds(60)
        let group = ServiceGroup(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try? await group.run() }
            for await _ in started { break }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        let lines = sink.lines
        #expect(lines.contains("warning Did not stop within the shutdown grace period; cancelled Stubborn"), "\(lines)")
        #expect(lines.contains("notice Cancelled before its turn to stop Later"), "\(lines)")
        #expect(lines.contains("notice Stopped after cancellation Stubborn"), "\(lines)")
        #expect(lines.contains("notice Stopped after cancellation Later"), "\(lines)")
        // The one that stopped when asked is not named at all.
        #expect(!lines.contains { $0.hasSuffix("Polite") }, "\(lines)")
    }
}
