import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import HeraldCore
@testable import HeraldUpstream

/// The streams of one HTTP/2 connection as a value (`HTTP2StreamsStateMachine`), and its handler
/// driven on an embedded event loop's time: no socket, no wall clock.
@Suite struct HTTP2StreamsStateMachineTests {
    typealias Machine = HTTP2StreamsStateMachine<Int>
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func headers(status: String, endStream: Bool) -> HTTP2Frame.FramePayload {
        .headers(.init(headers: HPACKHeaders([(":status", status), ("apns-id", "A")]), endStream: endStream))
    }

    func data(_ text: String, endStream: Bool) -> HTTP2Frame.FramePayload {
        .data(.init(data: .byteBuffer(ByteBuffer(string: text)), endStream: endStream))
    }

    func opened(_ action: Machine.OpenAction) -> HTTP2StreamID? {
        if case .open(let id, _) = action { return id }
        return nil
    }

    @Test func streamsAreOddAndIncreasingAndEachAnswerGoesToItsOwnRequest() throws {
        var machine = Machine(maxBodyBytes: 100)
        let a = try #require(opened(machine.open(1, deadline: t0, timeout: .seconds(1))))
        let b = try #require(opened(machine.open(2, deadline: t0, timeout: .seconds(1))))
        #expect(a == 1 && b == 3)
        guard case .none = machine.read(headers(status: "200", endStream: false), on: b) else {
            Issue.record("answered before its end")
            return
        }
        guard case .answer(let first, let response) = machine.read(data("{}", endStream: true), on: b) else {
            Issue.record("not answered")
            return
        }
        #expect(first == 2 && response.status == 200 && response.bodyText == "{}")
        #expect(response.headers.first(name: "apns-id") == "A")
        guard case .answer(let second, let other) = machine.read(headers(status: "410", endStream: true), on: a) else {
            Issue.record("not answered")
            return
        }
        #expect(second == 1 && other.status == 410)
        #expect(machine.inFlight == 0)
    }

    @Test func informationalHeadersAreSkippedAndAMissingStatusResetsTheStream() throws {
        var machine = Machine(maxBodyBytes: 100)
        let id = try #require(opened(machine.open(1, deadline: t0, timeout: .seconds(1))))
        guard case .none = machine.read(headers(status: "103", endStream: false), on: id) else {
            Issue.record("an informational answer ended the request")
            return
        }
        guard case .fail(let waiter, .malformedResponse, reset: true) = machine.read(headers(status: "abc", endStream: true), on: id)
        else {
            Issue.record("a bad :status was taken")
            return
        }
        #expect(waiter == 1)
    }

    @Test func theServersResetFailsTheRequestWithoutResettingAgain() throws {
        var machine = Machine(maxBodyBytes: 100)
        let id = try #require(opened(machine.open(1, deadline: t0, timeout: .seconds(1))))
        guard case .fail(_, .reset(.refusedStream), reset: false) = machine.read(.rstStream(.refusedStream), on: id) else {
            Issue.record("the reset was not the request's failure")
            return
        }
        guard case .none = machine.read(data("late", endStream: true), on: id) else {
            Issue.record("a frame after the reset answered")
            return
        }
    }

    @Test func theTimerExpiresOnlyWhatIsDueAndArmsByTheEarliestLeft() throws {
        var machine = Machine(maxBodyBytes: 100)
        let early = try #require(opened(machine.open(1, deadline: t0 + .seconds(1), timeout: .seconds(1))))
        _ = machine.open(2, deadline: t0 + .seconds(5), timeout: .seconds(5))
        _ = machine.open(3, deadline: t0 + .seconds(3), timeout: .seconds(3))
        let (expired, next) = machine.timerFired(now: t0 + .seconds(2))
        #expect(expired.map(\.waiter) == [1] && expired.map(\.id) == [early] && expired.map(\.timeout) == [.seconds(1)])
        #expect(next == t0 + .seconds(3))
        #expect(machine.inFlight == 2)
        let (rest, none) = machine.timerFired(now: t0 + .seconds(5))
        #expect(Set(rest.map(\.waiter)) == [2, 3] && none == nil)
    }

    @Test func theWindowIsGivenBackAtHalfTheInitialWindowOnTheConnectionAndOnAnOpenStream() throws {
        var machine = Machine(maxBodyBytes: 100)
        let id = try #require(opened(machine.open(1, deadline: t0, timeout: .seconds(1))))
        let half = Machine.windowUpdateThreshold
        let first = machine.received(half - 1, on: id, endStream: false)
        #expect(first.connection == nil && first.stream == nil)
        let second = machine.received(10, on: id, endStream: false)
        #expect(second.connection == half + 9 && second.stream == half + 9)
        // The last frame of an answer: the connection's window only (the stream is closing).
        let last = machine.received(half, on: id, endStream: true)
        #expect(last.connection == half && last.stream == nil)
        // Bytes for a stream no longer carrying a request still count on the connection.
        let stray = machine.received(half, on: HTTP2StreamID(99), endStream: false)
        #expect(stray.connection == half && stray.stream == nil)
    }

    @Test func theLastStreamIdIsUsedOnceAndThenTheConnectionIsExhausted() {
        var machine = Machine(firstStreamID: HTTP2StreamID(Int(HTTP2StreamID.maxID)), maxBodyBytes: 100)
        #expect(opened(machine.open(1, deadline: t0, timeout: .seconds(1))) == HTTP2StreamID.maxID)
        guard case .exhausted(2) = machine.open(2, deadline: t0, timeout: .seconds(1)) else {
            Issue.record("a stream id past the last was opened")
            return
        }
    }

    @Test func closingFailsEveryRequestAndRefusesNewOnes() {
        var machine = Machine(maxBodyBytes: 100)
        _ = machine.open(1, deadline: t0, timeout: .seconds(1))
        _ = machine.open(2, deadline: t0, timeout: .seconds(1))
        let r16 = machine.close()
        #expect(Set(r16) == [1, 2])
        guard case .refuse(3) = machine.open(3, deadline: t0, timeout: .seconds(1)) else {
            Issue.record("a closed connection opened a stream")
            return
        }
        var inactive = Machine(maxBodyBytes: 1)
        guard case .refuse(4) = inactive.open(4, deadline: t0, timeout: .seconds(1), active: false) else {
            Issue.record("an inactive connection opened a stream")
            return
        }
    }

    @Test func anAbandonedRequestsStreamIsResetOnceAndItsLateAnswerIgnored() throws {
        var machine = Machine(maxBodyBytes: 100)
        let id = try #require(opened(machine.open(1, deadline: t0, timeout: .seconds(1))))
        let r17 = machine.abandon(id)
        #expect(r17)
        let r18 = machine.abandon(id)
        #expect(!r18)
        guard case .none = machine.read(headers(status: "200", endStream: true), on: id) else {
            Issue.record("an abandoned request answered")
            return
        }
        let r19 = machine.streamEnded(id)
        #expect(r19 == nil)
    }

    // MARK: The handler, on an embedded loop's time

    @Test func theHandlerResetsAndFailsAStreamWhenTheLoopsTimeReachesItsDeadline() throws {
        let streams = HTTP2Streams(maxBodyBytes: 100, clock: EventLoopClock())
        let channel = EmbeddedChannel(handler: streams)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let loop = channel.embeddedEventLoop
        func exchange(_ timeout: Duration) -> HTTP2Exchange {
            HTTP2Exchange(
                headers: HPACKHeaders([(":method", "POST"), (":path", "/3/device/x")]), body: ByteBuffer(string: "{}"),
                deadline: loop.now + TimeAmount(timeout), timeout: timeout)
        }
        let slow = exchange(.seconds(10))
        let fast = exchange(.seconds(4))
        streams.start(slow)
        streams.start(fast)
        let slowOutcome = Outcome(slow.answer)
        let fastOutcome = Outcome(fast.answer)
        let written = try (0..<4).map { _ in try #require(try channel.readOutbound(as: HTTP2Frame.self)) }
        #expect(written.map(\.streamID) == [1, 1, 3, 3])
        loop.advanceTime(by: .seconds(4))
        guard case .failure(let error) = fastOutcome.value else {
            Issue.record("not failed at its deadline")
            return
        }
        #expect((error as? Deadline.Exceeded)?.after == .seconds(4))
        let reset = try #require(try channel.readOutbound(as: HTTP2Frame.self))
        guard case .rstStream(.cancel) = reset.payload, reset.streamID == 3 else {
            Issue.record("stream 3 not reset: \(reset)")
            return
        }
        #expect(slowOutcome.value == nil)
        try channel.writeInbound(HTTP2Frame(streamID: 1, payload: headers(status: "200", endStream: true)))
        guard case .success(let response) = slowOutcome.value else {
            Issue.record("the other stream was not answered")
            return
        }
        #expect(response.status == 200)
        loop.advanceTime(by: .seconds(10))
        #expect(try channel.readOutbound(as: HTTP2Frame.self) == nil)
    }

    /// The connection's one timer, armed by the first request's deadline, fires during the second:
    /// it is armed again by the second one's own deadline, a whole timeout after it was sent for.
    @Test func aLaterStreamGetsTheWholeRequestTimeout() throws {
        let streams = HTTP2Streams(maxBodyBytes: 100, clock: EventLoopClock())
        let channel = EmbeddedChannel(handler: streams)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let loop = channel.embeddedEventLoop
        func exchange() -> HTTP2Exchange {
            HTTP2Exchange(
                headers: HPACKHeaders([(":method", "POST")]), body: nil, deadline: loop.now + .seconds(2), timeout: .seconds(2))
        }
        let first = exchange()
        streams.start(first)
        loop.advanceTime(by: .seconds(1))
        try channel.writeInbound(HTTP2Frame(streamID: 1, payload: headers(status: "200", endStream: true)))
        #expect(try #require(first.answer.answer).get().status == 200)
        let second = exchange()
        streams.start(second)
        let outcome = Outcome(second.answer)
        loop.advanceTime(by: .milliseconds(1999))  // past the first request's deadline, not this one's
        #expect(outcome.value == nil)
        loop.advanceTime(by: .milliseconds(1))
        guard case .failure(let error) = outcome.value else {
            Issue.record("not failed at its own deadline")
            return
        }
        #expect((error as? Deadline.Exceeded)?.after == .seconds(2))
    }

    @Test func theHandlerFailsEveryStreamWhenTheConnectionCloses() throws {
        let streams = HTTP2Streams(maxBodyBytes: 100, clock: EventLoopClock())
        let channel = EmbeddedChannel(handler: streams)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let loop = channel.embeddedEventLoop
        let exchange = HTTP2Exchange(
            headers: HPACKHeaders([(":method", "POST")]), body: nil, deadline: loop.now + .seconds(5), timeout: .seconds(5))
        streams.start(exchange)
        let outcome = Outcome(exchange.answer)
        try channel.close().wait()
        guard case .failure(let error) = outcome.value else {
            Issue.record("not failed when the connection closed")
            return
        }
        #expect(error as? UpstreamConnectionError == .closedUnanswered)
    }
}
