/// What a header field may hold on the wire, checked by Herald itself where it writes fields
/// (its responses, its upstream requests), so that SwiftNIO need not validate each header block
/// again: a name is an HTTP token (RFC 9110 §5.6.2), a value holds no NUL, CR or LF and no
/// leading or trailing space or tab (RFC 9110 §5.5, RFC 9113 §8.2.1). A CR or LF in a value would
/// end the header line where the value says.
package enum HTTPFieldSyntax {
    package static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { tokenBytes[Int($0)] }
    }

    package static func isFieldValue(_ value: String) -> Bool {
        let bytes = value.utf8
        if let first = bytes.first, first == 0x20 || first == 0x09 { return false }
        if let last = bytes.last, last == 0x20 || last == 0x09 { return false }
        return !bytes.contains { $0 == 0x00 || $0 == 0x0A || $0 == 0x0D }
    }

    /// `tchar`, by byte.
    private static let tokenBytes: [Bool] = (0..<256).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(UInt8(byte))
        }
    }
}
