import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// `ResponseWriter`, the one place responses are framed: the bytes the read deadline writes below
/// the HTTP encoder are the bytes the encoder itself writes for the same response.
@Suite struct ResponseWriterTests {
    static func throughTheEncoder(_ response: ServerResponse) throws -> ByteBuffer {
        let channel = EmbeddedChannel(handler: HTTPResponseEncoder())
        let head = ResponseWriter.head(response, version: .http1_1, keepAlive: false)
        try channel.writeOutbound(HTTPServerResponsePart.head(head))
        if response.body.readableBytes > 0 { try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(response.body))) }
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        var all = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { all.writeBuffer(&part) }
        _ = try channel.finish()
        return all
    }

    @Test(arguments: [MatrixErrors() as any ErrorRenderer, GorushErrors(), PlainTextErrors()])
    func theRaw408IsWhatTheEncoderWouldWrite(errors: any ErrorRenderer) throws {
        let response = errors.render(ServerError.requestTimeout)
        let raw = ResponseWriter.encoded(response)
        #expect(raw == (try Self.throughTheEncoder(response)))
        let text = String(buffer: raw)
        #expect(text.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(text.contains("Content-Length: \(response.body.readableBytes)\r\n"))
    }

    @Test func keptAliveResponsesSayTheirLengthAndNoClose() {
        let head = ResponseWriter.head(ServerResponse(status: .ok, body: ByteBuffer(string: "hello")), version: .http1_1, keepAlive: true)
        #expect(head.headers["Content-Length"] == ["5"])
        #expect(head.headers["Connection"].isEmpty)
    }
}
