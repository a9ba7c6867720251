import Testing

@testable import HeraldUpstream

/// The keep-alive connections of an HTTP/1.1 transport, as a value (`HTTP1PoolStateMachine`).
@Suite struct HTTP1PoolStateMachineTests {
    /// A connection: its name and its event loop's.
    final class Connection: Sendable {
        let name: String
        let loop: Int
        init(_ name: String, loop: Int) {
            self.name = name
            self.loop = loop
        }
        var id: ObjectIdentifier { ObjectIdentifier(self) }
    }

    typealias Machine = HTTP1PoolStateMachine<Connection>

    func taken(_ machine: inout Machine, onLoop loop: Int) -> String? {
        if case .reuse(let connection) = machine.take(isLocal: { $0.loop == loop }) { return connection.name }
        return nil
    }

    @Test func anIdleConnectionOnTheRequestsLoopIsTakenFirstThenTheNewest() {
        var machine = Machine()
        let (a, b, c) = (Connection("a", loop: 1), Connection("b", loop: 2), Connection("c", loop: 3))
        for connection in [a, b, c] {
            let kept = machine.admit(connection, id: connection.id)
            #expect(kept)
            let idle = machine.putBack(connection, id: connection.id, active: true)
            #expect(idle)
        }
        #expect(taken(&machine, onLoop: 2) == "b")
        #expect(taken(&machine, onLoop: 9) == "c")  // none on loop 9: the newest
        #expect(taken(&machine, onLoop: 9) == "a")
        guard case .open = machine.take(isLocal: { _ in true }) else {
            Issue.record("an empty pool reused a connection")
            return
        }
    }

    @Test func aClosedConnectionIsForgottenAndAnInactiveOneNotKept() {
        var machine = Machine()
        let (a, b) = (Connection("a", loop: 1), Connection("b", loop: 1))
        _ = machine.admit(a, id: a.id)
        _ = machine.putBack(a, id: a.id, active: true)
        machine.forget(a.id)
        #expect(machine.idleConnections.isEmpty)
        let kept = machine.putBack(b, id: b.id, active: false)
        #expect(!kept)
        #expect(machine.idleConnections.isEmpty)
    }

    @Test func shutDownHandsBackEveryOpenConnectionAndRefusesTheRest() {
        var machine = Machine()
        let (a, b) = (Connection("a", loop: 1), Connection("b", loop: 1))
        _ = machine.admit(a, id: a.id)
        _ = machine.admit(b, id: b.id)
        _ = machine.putBack(a, id: a.id, active: true)
        #expect(Set(machine.shutDown().map(\.name)) == ["a", "b"])
        guard case .shutDown = machine.take(isLocal: { _ in true }) else {
            Issue.record("a shut-down pool gave a connection")
            return
        }
        let late = Connection("late", loop: 1)
        let admitted = machine.admit(late, id: late.id)
        #expect(!admitted)
        let back = machine.putBack(b, id: b.id, active: true)
        #expect(!back)
    }
}
