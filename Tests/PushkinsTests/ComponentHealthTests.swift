import HeraldCore
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldCore

/// What `/health` reports of a store: its latest operation's outcome.
@Suite struct ComponentHealthTests {
    struct Down: Error {}
    struct Answered: Error {}

    @Test func theLatestOutcomeDecidesAndAnAnswerOrACancellationIsNoFailure() async {
        let health = ComponentHealth(name: "store", clock: SystemClock())
        #expect(health.problem == nil)
        _ = try? await health.track { () async throws -> Int in throw Down() }
        #expect(health.problem?.error == "Down()")
        _ = try? await health.track { () async throws -> Int in throw CancellationError() }
        #expect(health.problem != nil)  // a cancelled operation says nothing of the store
        _ = try? await health.track({ () async throws -> Int in throw Answered() }, isAnswer: { $0 is Answered })
        #expect(health.problem == nil)
        _ = try? await health.track { () async throws -> Int in throw Down() }
        _ = try? await health.track { 1 }
        #expect(health.problem == nil)
    }

    struct Other: Error {}

    /// A failure is logged when it begins and again only when its error changes, and the recovery
    /// once: an outage of a thousand operations is three lines, not a thousand. A component that
    /// fails and recovers by turns writes a line of each kind a minute.
    @Test func aFailureIsLoggedOnceAndAgainOnlyWhenItsErrorChanges() async {
        let sink = LogCapture { event in "\(event.level) \(event.message)" + (event.metadata?["error"].map { " \($0)" } ?? "") }
        let clock = ManualClock()
        let health = ComponentHealth(name: "store", clock: clock, logger: sink.logger())
        for _ in 0..<100 { _ = try? await health.track { () async throws -> Int in throw Down() } }
        #expect(sink.lines == ["warning store failed; /health names it until it answers again Down()"])
        _ = try? await health.track { () async throws -> Int in throw Other() }
        _ = try? await health.track { () async throws -> Int in throw Other() }
        _ = try? await health.track { 1 }
        _ = try? await health.track { 1 }
        #expect(
            sink.lines == [
                "warning store failed; /health names it until it answers again Down()",
                "warning store failed; /health names it until it answers again Other()",
                "notice store answers again",
            ])
        for _ in 0..<10 {
            _ = try? await health.track { () async throws -> Int in throw Other() }
            _ = try? await health.track { () async throws -> Int in throw Down() }
            _ = try? await health.track { 1 }
        }
        #expect(sink.lines.count == 3, "\(sink.lines)")
        clock.advance(by: ComponentHealth.logInterval)
        _ = try? await health.track { () async throws -> Int in throw Other() }
        _ = try? await health.track { 1 }
        #expect(
            sink.lines.suffix(2) == [
                "warning store failed; /health names it until it answers again Other()", "notice store answers again",
            ])
    }

    /// A check at start that fails is the component's problem at once, and the component is
    /// silent: the first use is not tried (it would wait its deadline), and a use a probe interval
    /// later is, and ends it.
    @Test func aFailedCheckAtStartMakesItSilentUntilItAnswers() async throws {
        let clock = ManualClock()
        let health = ComponentHealth(name: "store", clock: clock)
        let error = await health.checkAtStart { throw Down() }
        #expect(error is Down)
        #expect(health.problem?.error == "Down()")
        #expect(health.isSilent)
        let tried = Mutex(0)
        await #expect(throws: ComponentHealth.Skipped.self) { try await health.track { tried.withLock { $0 += 1 } } }
        #expect(tried.withLock { $0 } == 0)
        clock.advance(by: ComponentHealth.probeInterval)
        try await health.track { tried.withLock { $0 += 1 } }
        #expect(tried.withLock { $0 } == 1)
        #expect(health.problem == nil && !health.isSilent)
        #expect(await health.checkAtStart {} == nil)
        #expect(health.problem == nil)
    }
}
