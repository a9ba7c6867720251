import NIOCore
import Testing

@testable import HeraldHTTPServer

/// The race between a route's answer deadline and its handler's answer, as a value
/// (`AnswerDeadlineStateMachine`): which one the sender hears, and when the connection's one timer
/// is armed again.
@Suite struct AnswerDeadlineStateMachineTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func fire(_ machine: inout AnswerDeadlineStateMachine<String>, at now: NIODeadline, responding: Bool = true)
        -> AnswerDeadlineStateMachine<String>.TimerAction
    {
        machine.timerFired(now: now, responding: responding) { "502" }
    }

    @Test func theHandlerAnsweringFirstIsHeardAndTheLateTimerWritesNothing() {
        var machine = AnswerDeadlineStateMachine<String>()
        #expect(machine.start(due: t0 + .seconds(20)) == t0 + .seconds(20))
        let heard = machine.claim(open: true)
        #expect(heard)
        guard case .none = fire(&machine, at: t0 + .seconds(20)) else {
            Issue.record("the deadline answered after the handler")
            return
        }
        let early = machine.respond()
        #expect(early == nil)
    }

    @Test func theDeadlineAnsweringFirstWinsAndTheHandlersAnswerIsNotHeard() {
        var machine = AnswerDeadlineStateMachine<String>()
        _ = machine.start(due: t0 + .seconds(20))
        guard case .answer("502") = fire(&machine, at: t0 + .seconds(20)) else {
            Issue.record("the deadline did not answer at its time")
            return
        }
        guard case .none = fire(&machine, at: t0 + .seconds(21)) else {
            Issue.record("answered twice")
            return
        }
        let heard = machine.claim(open: true)
        #expect(!heard)
        let early = machine.respond()
        #expect(early == "502")
        let next = machine.respond()
        #expect(next == nil)  // the next request starts clean
    }

    /// The timer armed for one request fires while a later one is handled: it is armed again by
    /// the later one's time, and answers only then.
    @Test func aTimerFiringEarlyForALaterRequestIsArmedAgainByItsTime() {
        var machine = AnswerDeadlineStateMachine<String>()
        _ = machine.start(due: t0 + .seconds(20))
        _ = machine.claim(open: true)
        _ = machine.respond()
        _ = machine.start(due: t0 + .seconds(25))
        guard case .rearm(let due) = fire(&machine, at: t0 + .seconds(20)) else {
            Issue.record("the later request was answered at the earlier one's time")
            return
        }
        #expect(due == t0 + .seconds(25))
        guard case .answer = fire(&machine, at: due) else {
            Issue.record("not answered at its own time")
            return
        }
    }

    @Test func aClosedConnectionHearsNeither() {
        var machine = AnswerDeadlineStateMachine<String>()
        _ = machine.start(due: t0)
        guard case .none = fire(&machine, at: t0, responding: false) else {
            Issue.record("answered on a closed connection")
            return
        }
        let heard = machine.claim(open: false)
        #expect(!heard)
        let early = machine.respond()
        #expect(early == nil)
    }
}
