import HeraldCore
import HeraldHTTPServer
import NIOCore
import NIOHTTP1
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// The per-connection request handling, without sockets: what each part of a request leads to.
@Suite struct ConnectionStateMachineTests {
    func head(_ uri: String = "/x", contentLength: Int? = nil, version: HTTPVersion = .http1_1) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        if let contentLength { headers.add(name: "Content-Length", value: String(contentLength)) }
        return HTTPRequestHead(version: version, method: .POST, uri: uri, headers: headers)
    }

    func bytes(_ count: Int) -> ByteBuffer { ByteBuffer(repeating: 0x61, count: count) }

    @Test func aRequestIsCollectedAndDispatchedThenTheConnectionIsReused() {
        var machine = ConnectionStateMachine()
        let h = head()
        #expect(machine.head(h, limit: 10) == .none)
        #expect(machine.body(bytes(4)) == .none)
        #expect(machine.body(bytes(6)) == .none)
        #expect(machine.end() == .dispatch(head: h, body: bytes(10)))
        #expect(machine.state == .responding)
        #expect(machine.responded(keepAlive: true) == .none)
        #expect(machine.state == .idle)
        #expect(machine.head(h, limit: 10) == .none)
        #expect(machine.end() == .dispatch(head: h, body: ByteBuffer()))
        #expect(machine.responded(keepAlive: false) == .close)
        #expect(machine.state == .closed)
    }

    @Test func anAnnouncedOversizeBodyIsRefusedBeforeAnyByteIsRead() {
        var machine = ConnectionStateMachine()
        #expect(machine.head(head(contentLength: 11, version: .http1_0), limit: 10) == .refuse(limit: 10, version: .http1_0))
        #expect(machine.state == .draining(discarded: 0, limit: 10))
    }

    @Test func aStreamedOversizeBodyIsRefusedAtTheChunkThatPassesTheLimit() {
        var machine = ConnectionStateMachine()
        #expect(machine.head(head(), limit: 10) == .none)
        #expect(machine.body(bytes(10)) == .none)
        #expect(machine.body(bytes(1)) == .refuse(limit: 10, version: .http1_1))
    }

    @Test func afterA413UpToFourTimesTheLimitIsDiscardedThenTheConnectionCloses() {
        var machine = ConnectionStateMachine()
        _ = machine.head(head(contentLength: 100), limit: 10)
        #expect(machine.body(bytes(40)) == .none)
        #expect(machine.state == .draining(discarded: 40, limit: 10))
        #expect(machine.body(bytes(1)) == .close)
        #expect(machine.state == .closed)
    }

    @Test func anythingButBodyAfterA413ClosesTheConnection() {
        var refusedThenEnd = ConnectionStateMachine()
        _ = refusedThenEnd.head(head(contentLength: 100), limit: 10)
        #expect(refusedThenEnd.end() == .close)

        var refusedThenHead = ConnectionStateMachine()
        _ = refusedThenHead.head(head(contentLength: 100), limit: 10)
        #expect(refusedThenHead.head(head(), limit: 10) == .close)
    }

    @Test func partsOutOfOrderCloseTheConnection() {
        var bodyFirst = ConnectionStateMachine()
        #expect(bodyFirst.body(bytes(1)) == .close)
        var endFirst = ConnectionStateMachine()
        #expect(endFirst.end() == .close)
        var pipelinedWhileResponding = ConnectionStateMachine()
        _ = pipelinedWhileResponding.head(head(), limit: 10)
        _ = pipelinedWhileResponding.end()
        #expect(pipelinedWhileResponding.head(head(), limit: 10) == .close)
    }

    @Test func expect100ContinueWithinTheLimitAsksForTheInterimAnswer() {
        var machine = ConnectionStateMachine()
        var h = head(contentLength: 5)
        h.headers.add(name: "Expect", value: "100-Continue")
        #expect(machine.head(h, limit: 10) == .sendContinue(version: .http1_1))
        #expect(machine.body(bytes(5)) == .none)
        var tooLarge = ConnectionStateMachine()
        var big = head(contentLength: 50)
        big.headers.add(name: "Expect", value: "100-continue")
        #expect(tooLarge.head(big, limit: 10) == .refuse(limit: 10, version: .http1_1))  // no 100 for a body refused anyway
    }

    @Test func theDiscardAllowanceIsAtLeastTheConfiguredMinimum() {
        var machine = ConnectionStateMachine()
        machine.minimumDiscard = 1000
        _ = machine.head(head(contentLength: 5000), limit: 10)
        #expect(machine.body(bytes(999)) == .none)
        #expect(machine.body(bytes(1)) == .none)
        #expect(machine.body(bytes(1)) == .close)
    }
}
