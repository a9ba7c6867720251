/// A strict RFC 8259 JSON parser over UTF-8 bytes.
///
/// It refuses what Python's strict `json.loads` refuses for Sygnal (NaN, Infinity, invalid UTF-8,
/// trailing garbage) and, unlike a recursive parser without limits, refuses nesting deeper than
/// `maxDepth` instead of overflowing the stack. Duplicate keys keep the last value, as Python does.
package struct JSONParser {
    package struct Error: Swift.Error, Equatable, CustomStringConvertible {
        package let offset: Int
        package let reason: String
        package var description: String { "\(reason) at byte \(offset)" }
    }

    package static let defaultMaxDepth = 64

    /// Parses `bytes` where they lie when they are contiguous (a request's `ByteBuffer`, an
    /// array), without copying them.
    /// A string equal to one of `known` is that string, shared rather than made again.
    package static func parse(
        _ bytes: some Collection<UInt8>, maxDepth: Int = defaultMaxDepth, known: KnownStrings = .empty
    ) throws(Error) -> JSONValue {
        if let parsed = bytes.withContiguousStorageIfAvailable({ parse(buffer: $0, maxDepth: maxDepth, known: known) }) {
            return try parsed.get()
        }
        return try Array(bytes).withUnsafeBufferPointer { parse(buffer: $0, maxDepth: maxDepth, known: known) }.get()
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int, known: KnownStrings) -> Result<JSONValue, Error> {
        var parser = JSONParser(bytes: buffer, maxDepth: maxDepth, known: known)
        (parser.members, parser.elements) = JSONScratch.take()
        defer {
            // Moved out, not copied, so that the buffers go back with one reference each.
            var members: [(key: String, value: JSONValue)] = []
            var elements: [JSONValue] = []
            swap(&members, &parser.members)
            swap(&elements, &parser.elements)
            JSONScratch.giveBack(members: members, elements: elements)
        }
        parser.skipWhitespace()
        do throws(Error) {
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.error("trailing data after JSON value") }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }

    package static func parse(_ string: String, maxDepth: Int = defaultMaxDepth) throws(Error) -> JSONValue {
        try parse(Array(string.utf8), maxDepth: maxDepth)
    }

    /// The bytes parsed, valid for the parse (`parse(buffer:maxDepth:)`).
    private let bytes: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    private let known: KnownStrings
    private var index = 0
    /// The members of the objects being parsed, innermost last, and likewise the elements of the
    /// arrays: one buffer each for the whole parse, so that each object's and array's own storage
    /// is allocated once, at its final size, instead of growing (and reallocating) member by member.
    /// They are the thread's, kept from one parse to the next (`JSONScratch`).
    private var members: [(key: String, value: JSONValue)] = []
    private var elements: [JSONValue] = []

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, known: KnownStrings) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.known = known
    }

    private func error(_ reason: String) -> Error { Error(offset: index, reason: reason) }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(Error) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(Error) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("invalid literal") }
        let base = literal.utf8Start
        for i in 0..<count where bytes[index + i] != base[i] {
            throw error("invalid literal")
        }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(Error) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting too deep") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(JSONObject())
        }
        let start = members.count
        defer { members.removeSubrange(start...) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected object key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            members.append((key, try parseValue(depth: depth)))
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                var object = JSONObject(minimumCapacity: members.count - start)
                // A repeated key keeps its first place and its last value.
                for member in members[start...] { object[member.key] = member.value }
                return .object(object)
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(Error) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting too deep") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array([])
        }
        let start = elements.count
        defer { elements.removeSubrange(start...) }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                // A copy of its own, at its size: `Array(elements[start...])` would share the
                // scratch buffer when the array is its whole content, and the scratch's next
                // change would then copy it (and the thread would keep the array's storage).
                var array: [JSONValue] = []
                array.reserveCapacity(elements.count - start)
                array.append(contentsOf: elements[start...])
                return .array(array)
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func parseNumber() throws(Error) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw error("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(bytes[index]) {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        } else {
            throw error("invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits else { throw error("invalid number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits else { throw error("invalid number") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { throw error("number out of range") }
        return .double(value)
    }

    /// A string without escapes (nearly every one) is validated and made in one step; with escapes,
    /// its UTF-8 is assembled first and validated once.
    private mutating func parseString() throws(Error) -> String {
        index += 1  // opening quote
        let start = index
        // The OR of the string's bytes: below 0x80, the string is ASCII and valid as it is.
        var high: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let string: String
                if high < 0x80 {
                    // `String(decoding:)` is specialised here; `String(validating:)` is a generic
                    // call into the standard library, which looks up its type metadata every time.
                    let utf8 = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    string = known.string(for: utf8) ?? String(decoding: utf8, as: UTF8.self)
                } else {
                    guard let valid = String(validating: bytes[start..<index], as: UTF8.self) else {
                        throw Error(offset: start, reason: "invalid UTF-8 in string")
                    }
                    string = valid
                }
                index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            high |= byte
            index += 1
        }
        var utf8 = Array(bytes[start..<index])
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                guard let string = String(validating: utf8, as: UTF8.self) else {
                    throw Error(offset: start, reason: "invalid UTF-8 in string")
                }
                return string
            }
            if byte < 0x20 { throw error("control character in string") }
            index += 1
            guard byte == UInt8(ascii: "\\") else {
                utf8.append(byte)
                continue
            }
            guard index < bytes.count else { throw error("unterminated escape") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"): UTF8.encode(try parseUnicodeEscape()) { utf8.append($0) }
            default: throw error("invalid escape")
            }
        }
    }

    private mutating func parseHex4() throws(Error) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// A lone surrogate (which Python would carry along) becomes U+FFFD so that the text stays valid UTF-8.
    private mutating func parseUnicodeEscape() throws(Error) -> Unicode.Scalar {
        let first = try parseHex4()
        if (0xD800...0xDBFF).contains(first) {
            if index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                let save = index
                index += 2
                let second = try parseHex4()
                if (0xDC00...0xDFFF).contains(second) {
                    let combined = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    return Unicode.Scalar(combined) ?? "\u{FFFD}"
                }
                index = save
            }
            return "\u{FFFD}"
        }
        return Unicode.Scalar(first) ?? "\u{FFFD}"
    }
}
