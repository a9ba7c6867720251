import HeraldCore
import NIOCore
import NIOHTTP1

/// The one place a response becomes HTTP (docs/architecture.md, "Errors"): its framing
/// (`Content-Length` always, `Connection: close` when the connection ends after it) and its parts.
/// The connection handler writes answers through it, the malformed-request responder its 400, and
/// the read deadline its 408, which it writes as bytes below the HTTP encoder.
package enum ResponseWriter {
    /// The head `response` is sent with. A field that is not valid HTTP (`HTTPFieldSyntax`: a CR
    /// or LF in a value would start a header of the value's making) is left out: every field is
    /// checked here, so SwiftNIO's encoder does not validate the head again (`HTTPServer`). It takes
    /// the answer (`consuming`): its fields become the head's without a copy when the caller hands
    /// on its last use.
    static func head(_ response: consuming ServerResponse, version: HTTPVersion, keepAlive: Bool) -> HTTPResponseHead {
        let status = response.status
        let length = response.body.readableBytes
        var headers = (consume response).headers
        if !headers.allSatisfy({ HTTPFieldSyntax.isToken($0.name) && HTTPFieldSyntax.isFieldValue($0.value) }) {
            headers = HTTPHeaders(
                headers.filter { HTTPFieldSyntax.isToken($0.name) && HTTPFieldSyntax.isFieldValue($0.value) }.map { ($0.name, $0.value) })
        }
        // The framing is written here, not by SwiftNIO's encoder (`encoderConfiguration`): a length
        // for every answer that may have a body, none for one that may not (1xx, 204, 304: RFC 9110
        // §8.6), whose body is not written either; never a `Transfer-Encoding` a handler set, which
        // would contradict the length (the fields are this answer's own here: no copy is made).
        headers.remove(name: "Transfer-Encoding")
        if status.mayHaveResponseBody {
            headers.replaceOrAdd(name: "Content-Length", value: String(length))
        } else {
            headers.remove(name: "Content-Length")
        }
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        return HTTPResponseHead(version: version, status: status, headers: headers)
    }

    /// Writes `response` as head, body and end, and flushes; `promise` (when the connection closes
    /// after it) completes once the end is written. A kept-alive answer passes none: a promise per
    /// response cost about 1.5 % of an APNs notify's CPU (bench/run.sh under perf).
    static func write(
        _ response: consuming ServerResponse, version: HTTPVersion, keepAlive: Bool, context: ChannelHandlerContext,
        promise: EventLoopPromise<Void>?, wrap: (HTTPServerResponsePart) -> NIOAny
    ) {
        let body = response.body
        let hasBody = response.status.mayHaveResponseBody && body.readableBytes > 0
        context.write(wrap(.head(head(consume response, version: version, keepAlive: keepAlive))), promise: nil)
        if hasBody { context.write(wrap(.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(wrap(.end(nil)), promise: promise)
    }

    /// The encoder's configuration: it adds and removes no framing field, as `head` has written
    /// them (its check of every head for a `Transfer-Encoding` to remove copied the head's fields,
    /// an allocation per answer).
    static var encoderConfiguration: HTTPResponseEncoder.Configuration {
        var configuration = HTTPResponseEncoder.Configuration()
        configuration.automaticallySetFramingHeaders = false
        return configuration
    }

    /// `response` as the bytes HTTP/1.1 sends, for a handler below the HTTP encoder; the connection
    /// closes after it.
    static func encoded(_ response: ServerResponse) -> ByteBuffer {
        let head = head(response, version: .http1_1, keepAlive: false)
        var raw = ByteBuffer(string: "HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n")
        for (name, value) in head.headers { raw.writeString("\(name): \(value)\r\n") }
        raw.writeString("\r\n")
        var body = response.body
        if response.status.mayHaveResponseBody { raw.writeBuffer(&body) }
        return raw
    }
}
