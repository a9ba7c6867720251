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
        // A document's places are 32-bit (`JSONObject`); no body Herald accepts comes near.
        guard buffer.count < Int(Int32.max) else { return .failure(Error(offset: 0, reason: "document too large")) }
        var parser = JSONParser(bytes: buffer, maxDepth: maxDepth, known: known)
        parser.scratch = JSONScratch.take()
        defer {
            // Moved out, not copied, so that the buffers go back with one reference each.
            var buffers = JSONScratch.Buffers()
            swap(&buffers, &parser.scratch)
            JSONScratch.giveBack(buffers)
        }
        parser.skipWhitespace()
        do throws(Error) {
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.error("trailing data after JSON value") }
            return .success(parser.finished(value))
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
    /// arrays: one buffer each for the whole parse, so that each array's own storage is allocated
    /// once, at its final size, instead of growing (and reallocating) element by element. And the
    /// members of the objects parsed so far, each object a range of them: the document they are
    /// copied into once, at its size, when the array or the body that holds them ends
    /// (docs/architecture.md, "The notify's JSON as documents"). They are the thread's, kept from
    /// one parse to the next (`JSONScratch`).
    private var scratch = JSONScratch.Buffers()
    /// Where the document being made begins in `scratch.document`: an array's objects make a
    /// document of their own (it holds them, and a document cannot hold what holds it).
    private var documentStart = 0

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
        let start = scratch.members.count
        let mark = scratch.document.count
        defer { scratch.members.removeSubrange(start...) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected object key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            scratch.members.append((key, try parseValue(depth: depth)))
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return closeObject(membersFrom: start, documentMark: mark)
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    /// The object whose members are `scratch.members[start...]`: a range of the document, or, past
    /// `JSONObject.indexedFrom` members, an object of its own with its keys indexed (and its own
    /// objects made its own too, out of the document, where they lie from `mark` on).
    private mutating func closeObject(membersFrom start: Int, documentMark mark: Int) -> JSONValue {
        // A repeated key keeps its first place and its last value.
        if scratch.members.count - start > JSONObject.indexedFrom {
            var object = JSONObject(minimumCapacity: scratch.members.count - start)
            for member in scratch.members[start...] { object[member.key] = ownCopy(member.value) }
            scratch.document.removeSubrange(mark...)
            return .object(object)
        }
        var end = start
        for place in start..<scratch.members.count {
            let key = scratch.members[place].key
            if let first = scratch.members[start..<end].firstIndex(where: { $0.key == key }) {
                scratch.members[first].value = scratch.members[place].value
            } else {
                if place != end { scratch.members[end] = scratch.members[place] }
                end += 1
            }
        }
        let at = scratch.document.count - documentStart
        // Member by member: `append(contentsOf:)` of a slice copies its pairs through the tuple's
        // generic value witnesses, several times slower.
        for place in start..<end { scratch.document.append(scratch.members[place]) }
        return .object(JSONObject(pendingAt: at, count: end - start))
    }

    /// `value` with its objects pending in the document made objects of their own.
    private func ownCopy(_ value: JSONValue) -> JSONValue {
        guard case .object(let pending) = value, let range = pending.pendingRange else { return value }
        var object = JSONObject(minimumCapacity: range.count)
        for place in range {
            let member = scratch.document[documentStart + place]
            object[member.key] = ownCopy(member.value)
        }
        return .object(object)
    }

    /// `value` read from the document made so far: its objects pending there become windows on it.
    private func finished(_ value: JSONValue) -> JSONValue {
        guard scratch.document.count > documentStart else { return value }
        return JSONObject.bind(value, in: document())
    }

    /// The document made since `documentStart`: a copy at its size. (`ContiguousArray` of a slice
    /// that is the whole scratch buffer would share it, with all its room, and the thread's next
    /// parse would then make a new one.)
    private func document() -> ContiguousArray<JSONObject.Element> {
        var document = ContiguousArray<JSONObject.Element>()
        document.reserveCapacity(scratch.document.count - documentStart)
        for place in documentStart..<scratch.document.count { document.append(scratch.document[place]) }
        return document
    }

    private mutating func parseArray(depth: Int) throws(Error) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting too deep") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array([])
        }
        let start = scratch.elements.count
        let outerDocument = documentStart
        documentStart = scratch.document.count
        defer {
            scratch.elements.removeSubrange(start...)
            scratch.document.removeSubrange(documentStart...)
            documentStart = outerDocument
        }
        while true {
            skipWhitespace()
            scratch.elements.append(try parseValue(depth: depth))
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
                array.reserveCapacity(scratch.elements.count - start)
                if scratch.document.count > documentStart {
                    // Its objects' document, made once for them all.
                    let document = document()
                    for element in scratch.elements[start...] { array.append(JSONObject.bind(element, in: document)) }
                } else {
                    array.append(contentsOf: scratch.elements[start...])
                }
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
