import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// `ResponseWriter`, the one place responses are framed: the bytes the read deadline writes below
/// the HTTP encoder are the bytes the encoder itself writes for the same response.
@Suite struct ResponseWriterTests {
    /// What the server's encoder writes for `response` (or SwiftNIO's own framing, with `nioFraming`).
    static func throughTheEncoder(_ response: ServerResponse, keepAlive: Bool = false, nioFraming: Bool = false) throws -> ByteBuffer {
        let encoder = nioFraming ? HTTPResponseEncoder() : HTTPResponseEncoder(configuration: ResponseWriter.encoderConfiguration)
        let channel = EmbeddedChannel(handler: encoder)
        let head = ResponseWriter.head(response, version: .http1_1, keepAlive: keepAlive)
        try channel.writeOutbound(HTTPServerResponsePart.head(head))
        if response.status.mayHaveResponseBody && response.body.readableBytes > 0 {
            try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(response.body)))
        }
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

    /// The server frames its answers itself: the bytes are the ones SwiftNIO's own framing writes,
    /// a length for an answer with a body (empty or not), none and no body for 204 and 304.
    @Test(arguments: [
        ServerResponse.json(.ok, ["rejected": .array([])]), ServerResponse(status: .ok), ServerResponse(status: .badRequest),
        ServerResponse(status: .noContent, body: ByteBuffer(string: "not sent")), ServerResponse(status: .notModified),
    ])
    func theServersFramingIsSwiftNIOs(response: ServerResponse) throws {
        for keepAlive in [true, false] {
            let ours = try Self.throughTheEncoder(response, keepAlive: keepAlive)
            #expect(ours == (try Self.throughTheEncoder(response, keepAlive: keepAlive, nioFraming: true)))
            let text = String(buffer: ours)
            if response.status.mayHaveResponseBody {
                #expect(text.contains("Content-Length: \(response.body.readableBytes)\r\n"))
            } else {
                #expect(!text.lowercased().contains("content-length") && !text.contains("not sent"))
            }
            #expect(!text.lowercased().contains("transfer-encoding"))
        }
    }

    /// A `Transfer-Encoding` a handler set never reaches the wire beside the length (a response
    /// framed two ways), as SwiftNIO's own framing removed it.
    @Test func aHandlersTransferEncodingIsLeftOut() throws {
        var headers = HTTPHeaders()
        headers.add(name: "Transfer-Encoding", value: "chunked")
        let response = ServerResponse(status: .ok, headers: headers, body: ByteBuffer(string: "hello"))
        let text = String(buffer: try Self.throughTheEncoder(response, keepAlive: true))
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        #expect(
            try Self.throughTheEncoder(response, keepAlive: true)
                == (try Self.throughTheEncoder(response, keepAlive: true, nioFraming: true)))
    }

    @Test func keptAliveResponsesSayTheirLengthAndNoClose() {
        let head = ResponseWriter.head(ServerResponse(status: .ok, body: ByteBuffer(string: "hello")), version: .http1_1, keepAlive: true)
        #expect(head.headers["Content-Length"] == ["5"])
        #expect(head.headers["Connection"].isEmpty)
    }
}
