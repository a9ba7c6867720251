import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

@testable import HeraldCore
@testable import HeraldUpstream

/// A keep-alive HTTP/1.1 connection's rules as a value (`HTTP1ExchangeStateMachine`), and its
/// handler driven on an embedded event loop's time: no socket, no wall clock.
@Suite struct HTTP1ExchangeStateMachineTests {
    typealias Machine = HTTP1ExchangeStateMachine<Int>
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func head(_ status: HTTPResponseStatus, keepAlive: Bool = true) -> HTTPResponseHead {
        var head = HTTPResponseHead(version: .http1_1, status: status)
        if !keepAlive { head.headers.add(name: "Connection", value: "close") }
        return head
    }

    @Test func oneRequestIsAnsweredAndTheConnectionCarriesTheNext() throws {
        var machine = Machine(maxBodyBytes: 100)
        guard case .write(let armBy) = machine.send(1, deadline: t0 + .seconds(5), timeout: .seconds(5)) else {
            Issue.record("not written")
            return
        }
        #expect(armBy == t0 + .seconds(5))
        machine.head(head(.continue))  // informational: skipped
        machine.head(head(.ok))
        machine.body(ByteBuffer(string: "he"))
        machine.body(ByteBuffer(string: "llo"))
        guard case .answer(let waiter, let response, let reusable) = machine.end() else {
            Issue.record("not answered")
            return
        }
        #expect(waiter == 1 && reusable)
        #expect(response.status == 200 && response.bodyText == "hello")
        #expect(machine.isIdle)
        guard case .write = machine.send(2, deadline: t0 + .seconds(10), timeout: .seconds(5)) else {
            Issue.record("the kept connection refused the next request")
            return
        }
    }

    @Test func aSecondRequestWhileOneIsInFlightIsRefusedUnsent() {
        var machine = Machine(maxBodyBytes: 100)
        _ = machine.send(1, deadline: t0, timeout: .seconds(1))
        guard case .refuse(let refused) = machine.send(2, deadline: t0, timeout: .seconds(1)) else {
            Issue.record("two requests in flight")
            return
        }
        #expect(refused == 2)
    }

    @Test func theBodyIsKeptUpToItsBoundAndTheRestDropped() {
        var machine = Machine(maxBodyBytes: 4)
        _ = machine.send(1, deadline: t0, timeout: .seconds(1))
        machine.head(head(.ok))
        machine.body(ByteBuffer(string: "abc"))
        machine.body(ByteBuffer(string: "defgh"))
        guard case .answer(_, let response, _) = machine.end() else {
            Issue.record("not answered")
            return
        }
        #expect(response.bodyText == "abcd")
    }

    @Test func anAnswerWithoutKeepAliveClosesTheConnection() {
        var machine = Machine(maxBodyBytes: 10)
        _ = machine.send(1, deadline: t0, timeout: .seconds(1))
        machine.head(head(.ok, keepAlive: false))
        guard case .answer(_, _, let reusable) = machine.end() else {
            Issue.record("not answered")
            return
        }
        #expect(!reusable)
        guard case .refuse = machine.send(2, deadline: t0, timeout: .seconds(1)) else {
            Issue.record("a closed connection took a request")
            return
        }
    }

    @Test func theTimerFailsTheRequestOnlyOnceItsDeadlinePassed() {
        var machine = Machine(maxBodyBytes: 10)
        _ = machine.send(7, deadline: t0 + .seconds(5), timeout: .seconds(5))
        guard case .rearm(let again) = machine.timerFired(now: t0 + .seconds(4)) else {
            Issue.record("expired early")
            return
        }
        #expect(again == t0 + .seconds(5))
        guard case .expire(let waiter, let timeout) = machine.timerFired(now: t0 + .seconds(5)) else {
            Issue.record("not expired at its deadline")
            return
        }
        #expect(waiter == 7 && timeout == .seconds(5))
        guard case .none = machine.end() else {
            Issue.record("an expired request answered")
            return
        }
    }

    @Test func aTimerLeftFromAnAnsweredRequestEndsNothing() {
        var machine = Machine(maxBodyBytes: 10)
        _ = machine.send(1, deadline: t0 + .seconds(1), timeout: .seconds(1))
        machine.head(head(.ok))
        _ = machine.end()
        guard case .none = machine.timerFired(now: t0 + .seconds(2)) else {
            Issue.record("the timer ended an idle connection")
            return
        }
        #expect(machine.isIdle)
    }

    @Test func idleClosesOnlyWithNothingInFlight() {
        var machine = Machine(maxBodyBytes: 10)
        _ = machine.send(1, deadline: t0, timeout: .seconds(1))
        let r12 = machine.idleTimeout()
        #expect(!r12)
        let r13 = machine.close()
        #expect(r13 == 1)
        let r14 = machine.close()
        #expect(r14 == nil)
        var idle = Machine(maxBodyBytes: 10)
        let r15 = idle.idleTimeout()
        #expect(r15)
    }

    // MARK: The handler, on an embedded loop's time

    func request(on loop: EmbeddedEventLoop, timeout: Duration) -> (HTTP1Exchange.Request, ResponseSlot<HTTP1Exchange.Received>) {
        let slot = ResponseSlot<HTTP1Exchange.Received>()
        let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/push")
        let request = HTTP1Exchange.Request(
            head: head, body: ByteBuffer(string: "{}"), answer: slot, deadline: loop.now + TimeAmount(timeout), timeout: timeout)
        return (request, slot)
    }

    @Test func theHandlerFailsAnUnansweredRequestWhenTheLoopsTimeReachesItsDeadline() throws {
        let channel = EmbeddedChannel(handler: HTTP1Exchange(maxBodyBytes: 100, clock: EventLoopClock()))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let loop = channel.embeddedEventLoop
        let (request, answer) = request(on: loop, timeout: .seconds(30))
        try channel.writeOutbound(request)
        guard case .head(let sent) = try channel.readOutbound(as: HTTPClientRequestPart.self) else {
            Issue.record("no head written")
            return
        }
        #expect(sent.uri == "/push")
        let outcome = Outcome(answer)
        loop.advanceTime(by: .seconds(29))
        #expect(outcome.value == nil)
        loop.advanceTime(by: .seconds(1))
        guard case .failure(let error) = outcome.value else {
            Issue.record("not failed at its deadline")
            return
        }
        #expect((error as? Deadline.Exceeded)?.after == .seconds(30))
        #expect(!channel.isActive)
    }

    @Test func theHandlerKeepsTheConnectionAfterAnAnswerAndTheNextRequestGetsItsWholeTimeout() throws {
        let channel = EmbeddedChannel(handler: HTTP1Exchange(maxBodyBytes: 100, clock: EventLoopClock()))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let loop = channel.embeddedEventLoop
        let (first, firstAnswer) = request(on: loop, timeout: .seconds(10))
        try channel.writeOutbound(first)
        loop.advanceTime(by: .seconds(8))
        try channel.writeInbound(HTTPClientResponsePart.head(head(.ok)))
        try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: "ok")))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        let answered = try #require(firstAnswer.answer).get()
        #expect(answered.reusable && answered.response.bodyText == "ok")
        let (second, secondAnswer) = request(on: loop, timeout: .seconds(10))
        try channel.writeOutbound(second)
        let outcome = Outcome(secondAnswer)
        loop.advanceTime(by: .seconds(9))  // past the first request's deadline, not this one's
        #expect(outcome.value == nil)
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        guard case .failure(let error) = outcome.value else {
            Issue.record("not failed at its own deadline")
            return
        }
        #expect(error is Deadline.Exceeded)
    }
}

/// What a request's answer slot came to, once it did (read on the embedded loop's thread).
struct Outcome<Value: Sendable> {
    let slot: ResponseSlot<Value>

    init(_ slot: ResponseSlot<Value>) { self.slot = slot }

    var value: Result<Value, any Error>? { slot.answer }
}
