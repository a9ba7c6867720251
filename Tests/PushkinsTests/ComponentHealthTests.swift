import HeraldCore
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
}
