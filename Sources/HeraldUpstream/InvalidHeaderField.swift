import HeraldCore
import NIOHTTP1

/// A header field of an upstream request that is not valid HTTP (`HTTPFieldSyntax`), found by the
/// check both transports apply before a byte is written. Over HTTP/1.1 a CR or LF would end the
/// header line where the value says (a header or a request of the value's own making); over
/// HTTP/2 the server would refuse the stream. Because every field is checked here, the HTTP/2
/// connection does not validate header blocks again (`HTTP2Upstream`).
///
/// The values come from configuration, from Herald's own encoders and from upstream answers (an
/// OAuth access token): none should fail, and one that does fails its request for good, with no
/// retry (`UpstreamCall`), naming the field but never its value.
package struct InvalidHeaderField: Error, Sendable, Equatable, CustomStringConvertible {
    package let name: String

    package var description: String { "the request's header field \(name.prefix(64)) is not valid HTTP" }

    /// Throws for the first field of `headers` that is not valid.
    static func check(_ headers: HTTPHeaders) throws(InvalidHeaderField) {
        for (name, value) in headers {
            guard HTTPFieldSyntax.isToken(name), HTTPFieldSyntax.isFieldValue(value) else { throw InvalidHeaderField(name: name) }
        }
    }
}
