import NIOHTTP1

/// Herald's own check of the header fields it sends upstream, the one both transports apply
/// before a byte is written: a name is an HTTP token (RFC 9110 §5.1), a value holds no NUL, CR or
/// LF and no leading or trailing space or tab (RFC 9110 §5.5, RFC 9113 §8.2.1). Over HTTP/1.1 a
/// CR or LF would end the header line where the value says (a header or a request of the value's
/// own making); over HTTP/2 the server would refuse the stream. Because every field is checked
/// here, the HTTP/2 connection does not validate header blocks again (`HTTP2Upstream`).
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
            guard isToken(name), isFieldValue(value) else { throw InvalidHeaderField(name: name) }
        }
    }

    static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { tokenBytes[Int($0)] }
    }

    static func isFieldValue(_ value: String) -> Bool {
        let bytes = value.utf8
        if let first = bytes.first, first == 0x20 || first == 0x09 { return false }
        if let last = bytes.last, last == 0x20 || last == 0x09 { return false }
        return !bytes.contains { $0 == 0x00 || $0 == 0x0A || $0 == 0x0D }
    }

    /// `tchar` of RFC 9110 §5.6.2, by byte.
    private static let tokenBytes: [Bool] = (0..<256).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(UInt8(byte))
        }
    }
}
