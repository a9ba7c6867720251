import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

@Suite struct JSONParserTests {
    @Test func parsesNestedValuesKeepingKeyOrder() throws {
        let value = try JSONParser.parse(#"{"b": 1, "a": [true, null, 1.5, "x\u00e9\n"], "c": {}}"#)
        guard case .object(let o) = value else { Issue.record("not an object"); return }
        #expect(Array(o.keys) == ["b", "a", "c"])
        #expect(o["a"] == .array([.bool(true), .null, .double(1.5), .string("xé\n")]))
        #expect(o["b"] == .int(1))
    }

    @Test(arguments: [
        "NaN", "[Infinity]", "-Infinity", "{\"a\": 1,}", "[1 2]", "{'a': 1}", "01", "1.", "\"\u{01}\"", "", "{} x", "[\"\\x\"]",
    ])
    func refusesWhatStrictJSONRefuses(_ text: String) {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(text) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
    }

    /// Strings without escapes: ASCII ones take a shortcut, the others are validated. Either way a
    /// string parses exactly when its bytes are valid UTF-8, to the text they encode.
    @Test func unescapedStringsParseExactlyWhenTheirBytesAreValidUTF8() throws {
        var generator = SystemRandomNumberGenerator()
        // Printable ASCII, DEL, and bytes of UTF-8 sequences: leads, continuations, never valid.
        let alphabet: [UInt8] = [
            0x20, 0x41, 0x7A, 0x7E, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xED, 0xA0, 0xF0, 0x9F, 0xF5, 0xFF,
        ]
        var (accepted, refused) = (0, 0)
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...6, using: &generator)
            let content = (0..<length).map { _ in alphabet.randomElement(using: &generator) ?? 0x41 }
            let expected = String(validating: content, as: UTF8.self)
            let parsed = try? JSONParser.parse([0x22] + content + [0x22])
            #expect(parsed == expected.map(JSONValue.string), "bytes \(content)")
            if expected == nil { refused += 1 } else { accepted += 1 }
        }
        #expect(accepted > 1000 && refused > 1000)
        let object = try JSONParser.parse(#"{"xé": "café 🦉", "k": "plain"}"#)
        #expect(object["xé"] == .string("café 🦉"))
        #expect(object["k"] == .string("plain"))
    }

    @Test func refusesDeepNestingInsteadOfOverflowingTheStack() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(deep) }
        let ok = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        #expect((try? JSONParser.parse(ok)) != nil)
    }

    @Test func surrogatePairsCombineAndLoneSurrogatesBecomeReplacement() throws {
        #expect(try JSONParser.parse(#""\ud83e\udd89""#) == .string("🦉"))
        #expect(try JSONParser.parse(#""\ud83e x""#) == .string("\u{FFFD} x"))
    }

    @Test func duplicateKeysKeepTheLastValueAsPythonDoes() throws {
        #expect(try JSONParser.parse(#"{"a": 1, "a": 2}"#)["a"] == .int(2))
    }

    @Test func nestedObjectsAndArraysKeepTheirMembersInOrder() throws {
        // The parser gathers members in buffers shared by the whole parse: each nested object or
        // array must take exactly its own, and a repeated key its first place with its last value.
        let value = try JSONParser.parse(#"{"a": {"b": [1, {"c": 2}, 3], "d": [[], {}]}, "e": [4, [5, {"f": 6}]], "g": 7, "a": 8}"#)
        #expect(JSONWriter.string(value) == #"{"a":8,"e":[4,[5,{"f":6}]],"g":7}"#)
        let inner = try JSONParser.parse(#"{"a": {"b": [1, {"c": 2}, 3], "d": [[], {}]}, "x": null}"#)
        #expect(JSONWriter.string(inner) == #"{"a":{"b":[1,{"c":2},3],"d":[[],{}]},"x":null}"#)
    }

    @Test func largeIntegersFallBackToDouble() throws {
        #expect(try JSONParser.parse("123456789012345678901234") == .double(123456789012345678901234))
    }
}

@Suite struct JSONWriterTests {
    @Test func pythonStyleUsesPythonSeparatorsAndRawUTF8() {
        let value: JSONValue = ["a": [1, "é\"\\/"], "b": ["c": nil, "d": false]]
        #expect(JSONWriter.string(value, style: .python) == #"{"a": [1, "é\"\\/"], "b": {"c": null, "d": false}}"#)
        #expect(JSONWriter.string(value) == #"{"a":[1,"é\"\\/"],"b":{"c":null,"d":false}}"#)
    }

    @Test func escapesControlCharactersAsPythonDoes() {
        #expect(JSONWriter.string(.string("\u{01}\n\t\u{7F}\u{2028}")) == "\"\\u0001\\n\\t\u{7F}\u{2028}\"")
    }

    /// Escapes at either end, side by side and between runs of plain text, multi-byte included.
    @Test func escapesAnywhereInAStringKeepTheTextAroundThem() {
        let text = "\"ab\\\u{1F}\u{0C}é🦉 x\r\u{08}\""
        #expect(JSONWriter.string(.string(text)) == #""\"ab\\\u001f\fé🦉 x\r\b\"""#)
        #expect(JSONWriter.string(.string("")) == #""""#)
        #expect(JSONWriter.string(.string("plain")) == #""plain""#)
    }

    @Test func encodedLengthMatchesTheWriter() {
        for scalar in ["a", "é", "🦉", "\"", "\n", "\u{01}", "☻"].flatMap({ $0.unicodeScalars }) {
            #expect(JSONWriter.encodedLength(of: scalar) == JSONWriter.serialize(.string(String(scalar))).count - 2)
        }
    }

    @Test func roundTrips() throws {
        let text = #"{"x":[1,2.5,-3,"🦉"],"y":{"z":true}}"#
        #expect(JSONWriter.string(try JSONParser.parse(text)) == text)
    }
}

/// `JSONObject`: one array of members in order, with an index of its keys once it is large.
@Suite struct JSONObjectTests {
    @Test func aKeySetAgainKeepsItsPlaceAndANewKeyGoesLast() {
        var object: JSONObject = ["a": 1, "b": 2]
        object["a"] = 3
        object["c"] = 4
        #expect(object.keys == ["a", "b", "c"])
        #expect(object["a"] == 3)
        object["b"] = nil
        #expect(object.keys == ["a", "c"])
        #expect(object.removeValue(forKey: "a") == 3)
        #expect(object.removeValue(forKey: "a") == nil)
        #expect(object == ["c": 4])
        #expect(object != ["c": 5])
    }

    /// A `for` loop (the object's own iterator) and the collection's indices see the same members
    /// in the same order, small and indexed.
    @Test func aLoopVisitsTheMembersInOrder() {
        for size in [0, 3, JSONObject.indexedFrom + 5] {
            var object = JSONObject()
            for i in (0..<size).reversed() { object["k\(i)"] = .int(Int64(i)) }
            object["k1"] = nil
            var looped: [String] = []
            for (key, value) in object {
                looped.append(key)
                #expect(value == object[key])
            }
            #expect(looped == object.indices.map { object[$0].key })
            #expect(looped == (0..<size).reversed().filter { $0 != 1 }.map { "k\($0)" })
        }
    }

    @Test func equalityIsOrderSensitiveAsTheBytesOnTheWireAre() {
        #expect(JSONObject(dictionaryLiteral: ("a", 1), ("b", 2)) != JSONObject(dictionaryLiteral: ("b", 2), ("a", 1)))
        #expect(JSONValue.object(["a": 1, "b": 2]).semanticallyEquals(.object(["b": 2, "a": 1])))
    }

    /// Past `indexedFrom` members the keys are indexed: every lookup, overwrite and removal still
    /// finds its member, and the order stays that of first insertion.
    @Test func aLargeObjectFindsEveryKeyThroughItsIndexAcrossRemovals() throws {
        let count = 600
        var text = "{"
        for i in 0..<count { text += "\"k\(i)\": \(i), " }
        text += "\"k7\": -7}"
        var object = try #require(try JSONParser.parse(Array(text.utf8)).objectValue)
        #expect(object.count == count)
        #expect(object["k7"] == -7)
        #expect(object.index(forKey: "k7") == 7)
        #expect(object["k599"] == 599)
        for i in stride(from: 0, to: count, by: 2) { object["k\(i)"] = nil }
        #expect(object.count == count / 2)
        #expect(object["k2"] == nil)
        #expect(object["k3"] == 3)
        #expect(object.keys.prefix(3) == ["k1", "k3", "k5"])
        object["k2"] = 2
        #expect(object.keys.last == "k2")
        while object.count > 3 { object.removeValue(forKey: object.keys[0]) }
        #expect(object.keys == ["k597", "k599", "k2"])
        #expect(object["k599"] == 599)
    }

    @Test func mergingAndFilteringKeepOrder() {
        let base: JSONObject = ["a": 1, "b": 2]
        #expect(base.merging(["b": 3, "c": 4]) { $1 } == ["a": 1, "b": 3, "c": 4])
        #expect(base.merging(["b": 3]) { old, _ in old } == ["a": 1, "b": 2])
        #expect(base.filter { $0.key != "a" } == ["b": 2])
    }
}
