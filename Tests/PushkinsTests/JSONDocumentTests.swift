import Testing

@testable import HeraldCore

/// A parsed body's objects as windows on one document (docs/architecture.md, "The notify's JSON as
/// documents"): read, compared, written and changed as objects of their own are.
@Suite struct JSONDocumentTests {
    /// The same tree with every object made member by member (objects of their own).
    private static func own(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let object):
            var made = JSONObject()
            for (key, member) in object { made[key] = own(member) }
            return .object(made)
        case .array(let items):
            return .array(items.map(own))
        default:
            return value
        }
    }

    /// Every key of every object found where a loop over it says it is, all the way down.
    private static func expectLookupsAgree(_ value: JSONValue) {
        switch value {
        case .object(let object):
            for (place, (key, member)) in object.enumerated() {
                #expect(object.index(forKey: key) == place)
                #expect(object[key] == member)
                #expect(object[place].key == key)
                expectLookupsAgree(member)
            }
            #expect(object["no such key"] == nil)
        case .array(let items):
            items.forEach(expectLookupsAgree)
        default:
            break
        }
    }

    @Test(arguments: [
        #"{"notification":{"event_id":"$3957tyerfgewrf384","counts":{"unread":2},"devices":[{"app_id":"com.example","pushkey":"abc","data":{"format":"event_id_only"},"tweaks":{"sound":"bing"}}],"content":{"msgtype":"m.text","body":"I'm floating in a most peculiar way."}}}"#,
        #"[{"a":{"b":{"c":[{"d":{}}]}}},[[{"e":1}],{"f":[2,{"g":3}]}],{}]"#,
        #"{"a":{"x":1},"b":[{"y":{"z":2}},{"y":{"z":3}}],"c":{"d":{"e":{"f":"deep"}}},"a":{"x":4,"w":5}}"#,
        #"{"k":1,"k":{"n":2},"m":[],"k":[{"k":{"k":3}}]}"#,
        #"{"big":{"k0":0,"k1":{"inner":{"x":1}},"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":[{"in":"array"}],"k1":{"inner":{"x":2}}},"after":{"y":1}}"#,
        #"[{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":{"o":{"p":1}}},{"q":{"r":2}}]"#,
    ])
    func aParsedBodyReadsAsTheSameObjectsMadeMemberByMember(text: String) throws {
        let parsed = try JSONParser.parse(text)
        let made = Self.own(parsed)
        #expect(parsed == made)
        #expect(made == parsed)
        #expect(JSONWriter.string(parsed) == JSONWriter.string(made))
        Self.expectLookupsAgree(parsed)
        // Parsed again, on the same thread's buffers, it is the same.
        #expect(try JSONParser.parse(JSONWriter.string(parsed)) == parsed)
    }

    @Test func aRepeatedKeyKeepsItsFirstPlaceAndItsLastValueInADocument() throws {
        let parsed = try #require(try JSONParser.parse(#"{"a":1,"b":{"c":2},"a":{"d":3},"b":4}"#).objectValue)
        #expect(parsed.isWindow)
        #expect(parsed.keys == ["a", "b"])
        #expect(parsed["a"] == ["d": 3])
        #expect(parsed["b"] == 4)
        #expect(JSONWriter.string(.object(parsed)) == #"{"a":{"d":3},"b":4}"#)
    }

    /// The objects outside arrays lie in the body's document, an array's objects in the array's;
    /// an object past `indexedFrom` members has its own, indexed, and so do the objects in it.
    @Test func whichObjectsAreWindows() throws {
        let members = (0...JSONObject.indexedFrom).map { #""k\#($0)":{"v":\#($0)}"# }.joined(separator: ",")
        let parsed = try JSONParser.parse(#"{"a":{"b":{}},"list":[{"c":{"d":1}}],"large":{\#(members)}}"#)
        #expect(parsed.objectValue?.isWindow == true)
        #expect(parsed["a"]?.objectValue?.isWindow == true)
        #expect(parsed["a"]?["b"]?.objectValue?.isWindow == false)  // empty: nothing to share
        let item = try #require(parsed["list"]?.arrayValue?.first)
        #expect(item.objectValue?.isWindow == true)
        #expect(item["c"]?.objectValue?.isWindow == true)
        #expect(item["c"]?["d"] == 1)
        let large = try #require(parsed["large"]?.objectValue)
        #expect(!large.isWindow)
        #expect(large.count == JSONObject.indexedFrom + 1)
        #expect(large["k3"]?.objectValue?.isWindow == false)
        #expect(large["k\(JSONObject.indexedFrom)"]?["v"] == .int(Int64(JSONObject.indexedFrom)))
    }

    /// A window changed becomes an object of its own; what it was read from, and the windows
    /// read before, are unchanged.
    @Test func aChangedWindowIsACopyOfItsOwn() throws {
        let root = try #require(try JSONParser.parse(#"{"data":{"format":"event_id_only","n":{"m":1}},"other":2}"#).objectValue)
        var data = try #require(root["data"]?.objectValue)
        let nested = try #require(data["n"]?.objectValue)
        data["format"] = "full"
        data["added"] = true
        #expect(!data.isWindow)
        #expect(data.keys == ["format", "n", "added"])
        #expect(data["n"]?["m"] == 1)
        #expect(root["data"] == ["format": "event_id_only", "n": ["m": 1]])
        #expect(nested == ["m": 1])
        var removed = try #require(root["data"]?.objectValue)
        #expect(removed.removeValue(forKey: "format") == "event_id_only")
        #expect(removed == ["n": ["m": 1]])
        var reserved = root
        reserved.reserveCapacity(8)
        #expect(reserved == root)
        #expect(!reserved.isWindow)
        #expect(root.merging(["other": 3]) { $1 } == ["data": ["format": "event_id_only", "n": ["m": 1]], "other": 3])
        #expect(root.filter { $0.key == "other" } == ["other": 2])
    }

    /// Random trees written and parsed back read the same, all the way down.
    @Test func randomTreesParseBackToThemselves() throws {
        var random = SystemRandomNumberGenerator()
        func tree(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 3 : 6), using: &random) {
            case 0: return .int(Int64.random(in: -5...5, using: &random))
            case 1: return .string(String(repeating: "s", count: Int.random(in: 0...20, using: &random)))
            case 2: return .null
            case 3:
                return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in tree(depth + 1) })
            default:
                var object = JSONObject()
                for _ in 0..<Int.random(in: 0...(Bool.random(using: &random) ? 4 : 20), using: &random) {
                    object["k\(Int.random(in: 0..<30, using: &random))"] = tree(depth + 1)
                }
                return .object(object)
            }
        }
        for _ in 0..<300 {
            let made = tree(0)
            let text = JSONWriter.string(made)
            let parsed = try JSONParser.parse(text)
            #expect(parsed == made, "\(text)")
            #expect(JSONWriter.string(parsed) == text)
            Self.expectLookupsAgree(parsed)
        }
    }
}
