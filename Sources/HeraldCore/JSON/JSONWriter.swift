package import NIOCore

/// Serialises `JSONValue` exactly as Python's `json.dumps` does, in one of two styles.
///
/// `.python` uses Python's default separators (`", "` and `": "`), which is what Sygnal sends to
/// APNs and what its 4096-byte limit is measured against. `.compact` has no spaces. Non-ASCII text
/// is written as raw UTF-8 (`ensure_ascii=False`); control characters are escaped as Python does.
package struct JSONWriter {
    package enum Style: Sendable { case compact, python }

    package static func serialize(_ value: JSONValue, style: Style = .compact) -> [UInt8] {
        var out: [UInt8] = []
        // Room for a whole notification's payload (an APNs alert is about 400 bytes), reserved once.
        out.reserveCapacity(1024)
        write(value, style: style, into: &out)
        return out
    }

    package static func string(_ value: JSONValue, style: Style = .compact) -> String {
        String(decoding: serialize(value, style: style), as: UTF8.self)
    }

    /// `value` written straight into a buffer, as a request or response body is sent.
    package static func buffer(_ value: JSONValue, style: Style = .compact) -> ByteBuffer {
        var out = ByteBufferAllocator().buffer(capacity: 1024)
        write(value, style: style, into: &out)
        return out
    }

    package static func write(_ value: JSONValue, style: Style, into out: inout [UInt8]) {
        writeValue(value, style: style, into: &out)
    }

    package static func write(_ value: JSONValue, style: Style, into out: inout ByteBuffer) {
        writeValue(value, style: style, into: &out)
    }

    private static func writeValue<Sink: JSONSink>(_ value: JSONValue, style: Style, into out: inout Sink) {
        switch value {
        case .null: out.append(static: "null")
        case .bool(let b): out.append(static: b ? "true" : "false")
        case .int(let i): out.append(text: String(i))
        case .double(let d): out.append(text: pythonFloat(d))
        case .string(let s): writeQuoted(s, into: &out)
        case .array(let items):
            out.append(byte: UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { appendSeparator(style, into: &out) }
                writeValue(item, style: style, into: &out)
            }
            out.append(byte: UInt8(ascii: "]"))
        case .object(let object):
            out.append(byte: UInt8(ascii: "{"))
            var first = true
            for (key, item) in object {
                if !first { appendSeparator(style, into: &out) }
                first = false
                writeQuoted(key, into: &out)
                out.append(byte: UInt8(ascii: ":"))
                if style == .python { out.append(byte: UInt8(ascii: " ")) }
                writeValue(item, style: style, into: &out)
            }
            out.append(byte: UInt8(ascii: "}"))
        }
    }

    private static func appendSeparator<Sink: JSONSink>(_ style: Style, into out: inout Sink) {
        out.append(byte: UInt8(ascii: ","))
        if style == .python { out.append(byte: UInt8(ascii: " ")) }
    }

    /// The number of bytes `writeString` produces for one scalar, without the quotes.
    package static func encodedLength(of scalar: Unicode.Scalar) -> Int {
        switch scalar.value {
        case 0x22, 0x5C, 0x08, 0x0C, 0x0A, 0x0D, 0x09: return 2
        case 0..<0x20: return 6
        default: return UTF8.width(scalar)
        }
    }

    /// The string in quotes, escaped; the runs between escapes are copied whole.
    package static func writeString(_ string: String, into out: inout [UInt8]) { writeQuoted(string, into: &out) }

    /// `writeString` straight into a buffer (a request body written without a `JSONValue` tree).
    package static func writeString(_ string: String, into out: inout ByteBuffer) { writeQuoted(string, into: &out) }

    private static func writeQuoted<Sink: JSONSink>(_ string: String, into out: inout Sink) {
        out.append(byte: UInt8(ascii: "\""))
        forEachPiece(of: string) { out.append(bytes: $0) }
        out.append(byte: UInt8(ascii: "\""))
    }

    /// The escaped text of `string` without its quotes, piece by piece: the runs between escapes
    /// whole, and each escape sequence.
    @inline(__always)
    private static func forEachPiece(of string: String, _ write: (UnsafeRawBufferPointer) -> Void) {
        var string = string
        string.withUTF8 { bytes in
            var run = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                write(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[run..<index])))
                escape(byte, write)
                run = index + 1
            }
            write(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[run...])))
        }
    }

    /// The escape sequence of a quote, a backslash or a control character, as Python writes it.
    @inline(__always)
    private static func escape(_ byte: UInt8, _ write: (UnsafeRawBufferPointer) -> Void) {
        let backslash = UInt8(ascii: "\\")
        let short: UInt8? =
            switch byte {
            case UInt8(ascii: "\""), backslash: byte
            case 0x0A: UInt8(ascii: "n")
            case 0x0D: UInt8(ascii: "r")
            case 0x09: UInt8(ascii: "t")
            case 0x08: UInt8(ascii: "b")
            case 0x0C: UInt8(ascii: "f")
            default: nil
            }
        if let short {
            withUnsafeBytes(of: (backslash, short), write)
            return
        }
        let zero = UInt8(ascii: "0")
        withUnsafeBytes(of: (backslash, UInt8(ascii: "u"), zero, zero, hexDigit(byte >> 4), hexDigit(byte & 0xF)), write)
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }

    /// Python's `repr(float)` for the finite values JSON can carry ("3.0", "0.1", "1e+16").
    static func pythonFloat(_ d: Double) -> String { d.description }
}

/// Where `JSONWriter` writes: an array, or a buffer a body is sent from.
protocol JSONSink {
    mutating func append(byte: UInt8)
    mutating func append(bytes: UnsafeRawBufferPointer)
}

extension JSONSink {
    mutating func append(static text: StaticString) {
        text.withUTF8Buffer { append(bytes: UnsafeRawBufferPointer($0)) }
    }

    mutating func append(text: String) {
        var text = text
        text.withUTF8 { append(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension Array: JSONSink where Element == UInt8 {
    mutating func append(byte: UInt8) { append(byte) }
    mutating func append(bytes: UnsafeRawBufferPointer) { append(contentsOf: bytes) }
}

extension ByteBuffer: JSONSink {
    mutating func append(byte: UInt8) { writeInteger(byte) }
    mutating func append(bytes: UnsafeRawBufferPointer) { writeBytes(bytes) }
}
