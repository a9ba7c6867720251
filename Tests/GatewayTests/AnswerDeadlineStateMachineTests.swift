import Testing

@testable import HeraldHTTPServer

/// The race between a route's answer deadline and its handler's answer, as a value
/// (`AnswerDeadlineStateMachine`): which one the sender hears.
@Suite struct AnswerDeadlineStateMachineTests {
    @Test func theHandlerAnsweringFirstIsHeardAndTheLateTimerWritesNothing() {
        var machine = AnswerDeadlineStateMachine<String>()
        machine.start()
        let r1 = machine.claim(open: true)
        #expect(r1)
        let r2 = machine.fired(answering: "502", responding: true)
        #expect(!r2)
        let r3 = machine.respond()
        #expect(r3 == nil)
    }

    @Test func theDeadlineAnsweringFirstWinsAndTheHandlersAnswerIsNotHeard() {
        var machine = AnswerDeadlineStateMachine<String>()
        machine.start()
        let r4 = machine.fired(answering: "502", responding: true)
        #expect(r4)
        let r5 = machine.fired(answering: "502 again", responding: true)
        #expect(!r5)
        let r6 = machine.claim(open: true)
        #expect(!r6)
        let r7 = machine.respond()
        #expect(r7 == "502")
        let r8 = machine.respond()
        #expect(r8 == nil)  // the next request starts clean
    }

    @Test func aClosedConnectionHearsNeither() {
        var machine = AnswerDeadlineStateMachine<String>()
        machine.start()
        let r9 = machine.fired(answering: "502", responding: false)
        #expect(!r9)
        let r10 = machine.claim(open: false)
        #expect(!r10)
        let r11 = machine.respond()
        #expect(r11 == nil)
    }
}
