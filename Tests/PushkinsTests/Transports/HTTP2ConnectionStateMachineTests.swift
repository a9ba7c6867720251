import Testing

@testable import HeraldUpstream

/// Which connection an HTTP/2 transport sends on, as a value (`HTTP2ConnectionStateMachine`).
@Suite struct HTTP2ConnectionStateMachineTests {
    /// A connection: its name, and whether it is still open.
    struct Connection: Equatable {
        var name: String
        var open = true
    }

    typealias Machine = HTTP2ConnectionStateMachine<Connection, String>

    func next(_ machine: inout Machine, pending: String = "p") -> Machine.Next {
        machine.next(usable: { $0.open }, pending: { pending })
    }

    @Test func theFirstRequestOpensAConnectionOthersWaitForItAndThenUseIt() {
        var machine = Machine()
        guard case .open(let attempt, "p1") = next(&machine, pending: "p1") else {
            Issue.record("the first request did not open a connection")
            return
        }
        guard case .wait("p1") = next(&machine, pending: "p2") else {
            Issue.record("a second request opened another connection")
            return
        }
        machine.opened(attempt: attempt, Connection(name: "a"))
        guard case .use(Connection(name: "a")) = next(&machine) else {
            Issue.record("the opened connection was not used")
            return
        }
    }

    @Test func aFailedAttemptLeavesNoneAndTheNextRequestTriesAgain() {
        var machine = Machine()
        guard case .open(let attempt, _) = next(&machine) else { return }
        machine.opened(attempt: attempt, nil)
        guard case .open(let again, _) = next(&machine) else {
            Issue.record("no new attempt after a failure")
            return
        }
        #expect(again == attempt + 1)
    }

    @Test func aRetiredOrClosedConnectionIsReplacedOnTheNextRequest() {
        var machine = Machine()
        guard case .open(let attempt, _) = next(&machine) else { return }
        machine.opened(attempt: attempt, Connection(name: "a"))
        machine.retire { $0.name == "b" }  // another connection: nothing changes
        guard case .use = next(&machine) else {
            Issue.record("retiring another connection dropped this one")
            return
        }
        machine.retire { $0.name == "a" }
        guard case .open = next(&machine) else {
            Issue.record("a retired connection was used again")
            return
        }
        var closed = Machine()
        guard case .open(let first, _) = next(&closed) else { return }
        closed.opened(attempt: first, Connection(name: "a", open: false))
        guard case .open = next(&closed) else {
            Issue.record("a closed connection was used")
            return
        }
    }

    @Test func theLateEndOfAnOldAttemptChangesNothing() {
        var machine = Machine()
        guard case .open(let old, _) = next(&machine) else { return }
        machine.opened(attempt: old, nil)
        guard case .open(let current, "p2") = next(&machine, pending: "p2") else { return }
        machine.opened(attempt: old, Connection(name: "stale"))
        guard case .wait("p2") = next(&machine) else {
            Issue.record("an old attempt's connection replaced the one being opened")
            return
        }
        machine.opened(attempt: current, Connection(name: "fresh"))
        guard case .use(Connection(name: "fresh")) = next(&machine) else {
            Issue.record("the current attempt's connection was not used")
            return
        }
    }

    @Test func shutDownHandsBackTheConnectionAndFailsEveryLaterRequest() {
        var machine = Machine()
        guard case .open(let attempt, _) = next(&machine) else { return }
        machine.opened(attempt: attempt, Connection(name: "a"))
        #expect(machine.shutDown() == Connection(name: "a"))
        guard case .fail = next(&machine) else {
            Issue.record("a shut-down transport opened a connection")
            return
        }
        machine.opened(attempt: attempt, Connection(name: "late"))
        guard case .fail = next(&machine) else {
            Issue.record("a late connection revived a shut-down transport")
            return
        }
    }
}
