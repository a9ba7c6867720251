import Testing

@testable import HeraldUpstream

/// The slot an upstream call awaits its answer in (`ResponseSlot`): the first completion wins,
/// whether it comes before or after the caller waits, and cancellation fails a call at once.
@Suite struct ResponseSlotTests {
    struct Refused: Error, Equatable {}

    @Test func anAnswerGivenBeforeTheCallerWaitsIsTheOneItGets() async throws {
        let slot = ResponseSlot<Int>()
        slot.succeed(1)
        slot.succeed(2)
        slot.fail(Refused())
        #expect(try await slot.value() == 1)
        #expect(try slot.answer?.get() == 1)
    }

    @Test func aCallerThatWaitsFirstIsResumedByTheFirstAnswer() async {
        let slot = ResponseSlot<Int>()
        #expect(slot.answer == nil)
        await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask { try await slot.value() }
            // Answered from another task: before or after the first task waits, it sees the same.
            group.addTask {
                slot.fail(Refused())
                slot.succeed(3)
                return 0
            }
            var results: [Result<Int, Refused>] = []
            while let next = await group.nextResult() {
                results.append(next.mapError { $0 as? Refused ?? Refused() })
            }
            #expect(results.contains(.failure(Refused())))
            #expect(results.contains(.success(0)))
        }
    }

    @Test func aCancelledCallFailsWithoutAnAnswer() async throws {
        let slot = ResponseSlot<Int>()
        let call = Task {
            try await withTaskCancellationHandler {
                try await slot.value()
            } onCancel: {
                slot.fail(CancellationError())
            }
        }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        slot.succeed(4)  // an answer arriving later is ignored
        #expect(throws: CancellationError.self) { try slot.answer?.get() }
    }
}
