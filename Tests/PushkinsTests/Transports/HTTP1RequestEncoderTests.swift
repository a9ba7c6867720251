import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

@testable import HeraldUpstream

/// `HTTP1RequestEncoder` on an embedded channel: a request is one buffer, byte for byte what
/// SwiftNIO's own encoder wrote in pieces, and what it cannot frame is refused, not written.
@Suite struct HTTP1RequestEncoderTests {
    func head(_ fields: [(String, String)], uri: String = "/fcm/send?x=1") -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: .POST, uri: uri, headers: HTTPHeaders(fields))
    }

    /// Everything `channel` wrote, and how many buffers it took. (Parts are written with no
    /// promise, as the exchange writes them: `writeOutbound` would wait on the head's, which is
    /// kept until the request's end.)
    func written(by channel: EmbeddedChannel) throws -> (bytes: [UInt8], buffers: Int) {
        channel.flush()
        var bytes: [UInt8] = []
        var buffers = 0
        while let part = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = part else { throw HTTP1RequestEncoder.Unframable() }
            bytes += buffer.readableBytesView
            buffers += 1
        }
        return (bytes, buffers)
    }

    /// The same head and body through SwiftNIO's `HTTPRequestEncoder` and through Herald's: the
    /// same bytes, in one buffer where SwiftNIO wrote two.
    @Test func aRequestIsOneBufferOfSwiftNIOsBytes() throws {
        let fields = [
            ("Authorization", "vapid t=" + String(repeating: "a", count: 400) + ", k=BC"), ("TTL", "60"),
            ("Content-Encoding", "aes128gcm"), ("Host", "push.example:8443"), ("Content-Length", "5"),
        ]
        let body = ByteBuffer(string: "hello")

        let theirs = EmbeddedChannel(handler: HTTPRequestEncoder())
        theirs.write(HTTPClientRequestPart.head(head(fields)), promise: nil)
        theirs.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil)
        theirs.write(HTTPClientRequestPart.end(nil), promise: nil)
        let expected = try written(by: theirs)

        let ours = EmbeddedChannel(handler: HTTP1RequestEncoder())
        ours.write(HTTPClientRequestPart.head(head(fields)), promise: nil)
        ours.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil)
        ours.write(HTTPClientRequestPart.end(nil), promise: nil)
        let got = try written(by: ours)

        #expect(expected.buffers == 2)
        #expect(got.buffers == 1)
        // Compared as text (the bytes are ASCII), so that a failure shows where they differ.
        let text = String(decoding: got.bytes, as: UTF8.self)
        #expect(text == String(decoding: expected.bytes, as: UTF8.self))
        #expect(got.bytes.count == expected.bytes.count)
        #expect(text.hasPrefix("POST /fcm/send?x=1 HTTP/1.1\r\nAuthorization: vapid t=aaa"))
        #expect(text.hasSuffix("Content-Length: 5\r\n\r\nhello"))
    }

    /// A head without a length is framed by its body's, and a body in two parts is one body.
    @Test func aHeadWithoutALengthGetsTheBodysAndPartsAreJoined() throws {
        let channel = EmbeddedChannel(handler: HTTP1RequestEncoder())
        channel.write(HTTPClientRequestPart.head(head([("Host", "h")], uri: "/")), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: "ab"))), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: "cde"))), promise: nil)
        channel.write(HTTPClientRequestPart.end(nil), promise: nil)
        let got = try written(by: channel)
        #expect(got.buffers == 1)
        #expect(String(decoding: got.bytes, as: UTF8.self) == "POST / HTTP/1.1\r\nHost: h\r\ncontent-length: 5\r\n\r\nabcde")

        // The next request on the connection starts afresh; no body is a length of 0.
        channel.write(HTTPClientRequestPart.head(head([], uri: "/next")), promise: nil)
        channel.write(HTTPClientRequestPart.end(nil), promise: nil)
        #expect(String(decoding: try written(by: channel).bytes, as: UTF8.self) == "POST /next HTTP/1.1\r\ncontent-length: 0\r\n\r\n")
    }

    /// Each part's promise is kept until the request is written, and then succeeds with it.
    @Test func thePartsPromisesCompleteWithTheRequestsWrite() throws {
        let channel = EmbeddedChannel(handler: HTTP1RequestEncoder())
        let headWritten = channel.eventLoop.makePromise(of: Void.self)
        let bodyWritten = channel.eventLoop.makePromise(of: Void.self)
        channel.write(HTTPClientRequestPart.head(head([("Content-Length", "1")])), promise: headWritten)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: "x"))), promise: bodyWritten)
        let headDone = Atomic(false)
        headWritten.futureResult.whenSuccess { headDone.store(true, ordering: .relaxed) }
        channel.flush()
        let doneEarly = headDone.load(ordering: .relaxed)
        #expect(!doneEarly, "nothing is written before the request's end")
        #expect(try channel.readOutbound(as: IOData.self) == nil)
        let endWritten = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: endWritten)
        try endWritten.futureResult.wait()
        try headWritten.futureResult.wait()
        try bodyWritten.futureResult.wait()
        let done = headDone.load(ordering: .relaxed)
        #expect(done)
        #expect(try written(by: channel).buffers == 1)
    }

    /// Trailers (a length-framed request cannot carry them) and an end without a head fail their
    /// write, and what was held of the request, and nothing goes out.
    @Test func whatItCannotFrameIsRefused() throws {
        let channel = EmbeddedChannel(handler: HTTP1RequestEncoder())
        let headWritten = channel.eventLoop.makePromise(of: Void.self)
        channel.write(HTTPClientRequestPart.head(head([("Content-Length", "0")])), promise: headWritten)
        let ended = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPClientRequestPart.end(["Expires": "0"]), promise: ended)
        #expect(throws: HTTP1RequestEncoder.Unframable.self) { try ended.futureResult.wait() }
        #expect(throws: HTTP1RequestEncoder.Unframable.self) { try headWritten.futureResult.wait() }

        let orphan = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: orphan)
        #expect(throws: HTTP1RequestEncoder.Unframable.self) { try orphan.futureResult.wait() }
        #expect(try written(by: channel).buffers == 0)
    }
}
