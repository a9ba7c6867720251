import HeraldCore
import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldHTTPServer

/// The server's read deadline (`RequestReadDeadline`) on an embedded event loop's time: a request
/// not complete within `request_read_timeout` of its first byte is answered 408 and its connection
/// closed, and the connection's one timer is armed again for the next request.
@Suite struct RequestReadDeadlineTests {
    func connection(timeout: TimeAmount) throws -> (EmbeddedChannel, RequestReadDeadline) {
        let deadline = RequestReadDeadline(
            timeout: timeout, answer: ByteBuffer(string: "HTTP/1.1 408 Request Timeout\r\n\r\n"), clock: EventLoopClock())
        let channel = EmbeddedChannel(handler: deadline)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, deadline)
    }

    @Test func aRequestIncompleteAtItsDeadlineIsAnswered408AndClosed() throws {
        let (channel, _) = try connection(timeout: .seconds(1))
        try channel.writeInbound(ByteBuffer(string: "POST /_matrix/push/v1/notify HTTP/1.1\r\n"))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        let answer = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: answer).hasPrefix("HTTP/1.1 408"))
        #expect(!channel.isActive)
    }

    /// The timer armed by the first request fires during the second: it is armed again by the
    /// second one's own deadline, a whole timeout after its first byte.
    @Test func aLaterRequestOnTheConnectionGetsTheWholeReadTimeout() throws {
        let (channel, deadline) = try connection(timeout: .seconds(1))
        let loop = channel.embeddedEventLoop
        try channel.writeInbound(ByteBuffer(string: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
        deadline.requestComplete()
        deadline.responseComplete()
        loop.advanceTime(by: .milliseconds(600))
        try channel.writeInbound(ByteBuffer(string: "POST /_matrix/push/v1/notify HTTP/1.1\r\n"))
        loop.advanceTime(by: .milliseconds(999))  // past the first request's second, not this one's
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        let answer = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: answer).hasPrefix("HTTP/1.1 408"))
    }

    @Test func aCompleteRequestIsNotCutWhileItsAnswerIsMade() throws {
        let (channel, deadline) = try connection(timeout: .seconds(1))
        try channel.writeInbound(ByteBuffer(string: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
        deadline.requestComplete()
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(channel.isActive)
    }
}
