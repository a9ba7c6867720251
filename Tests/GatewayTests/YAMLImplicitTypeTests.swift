import HeraldCore
import HeraldHTTPServer
import Testing
import Yams

@testable import Gateway
@testable import HeraldHTTPServer

/// `YAMLImplicitType` must type every scalar as Yams' default (regular-expression) resolver did, so
/// that dropping that resolver changes no config file's meaning.
@Suite struct YAMLImplicitTypeTests {
    /// What Yams' default resolver makes of an untagged scalar.
    private static func yams(_ text: String) -> YAMLImplicitType {
        switch Node(text).tag.description {
        case "tag:yaml.org,2002:bool": .bool
        case "tag:yaml.org,2002:int": .int
        case "tag:yaml.org,2002:float": .float
        case "tag:yaml.org,2002:null": .null
        default: .string
        }
    }

    @Test func knownForms() {
        let expected: [(String, YAMLImplicitType)] = [
            ("yes", .bool), ("No", .bool), ("TRUE", .bool), ("off", .bool), ("oN", .string), ("y", .string),
            ("0", .int), ("-0", .int), ("+12", .int), ("1_000", .int), ("017", .int), ("0o17", .int), ("0x1F", .int),
            ("0b101", .int), ("1:30", .int), ("190:20:30", .int), ("09", .float), ("0x", .string), ("0b2", .string),
            ("1.5", .float), ("1.", .float), ("1e3", .float), ("-1.5E-3", .float), (".5", .float), (".5e+3", .float),
            (".5e3", .string), ("-.5", .string), (".inf", .float), ("-.Inf", .float), (".NaN", .float), ("-.nan", .string),
            ("1:30.5", .float), ("1:60", .string), ("~", .null), ("null", .null), ("", .null), ("NULL", .null),
            ("nil", .string), ("yes\n", .bool), ("8080\r\n", .int), ("\n", .null), ("80 80", .string), ("１２", .string),
        ]
        for (text, type) in expected {
            #expect(YAMLImplicitType.of(text) == type, "\(text.debugDescription)")
            #expect(Self.yams(text) == type, "Yams: \(text.debugDescription)")
        }
    }

    /// Every string of up to three characters from the alphabet the rules care about, and random
    /// longer ones, typed the same as Yams' resolver types them.
    @Test func agreesWithYamsResolver() {
        let alphabet = Array("019_+-.:eEoxbBaIinfNlu~ \n")
        var texts: [String] = [""]
        var frontier: [String] = [""]
        for _ in 1...3 {
            frontier = frontier.flatMap { prefix in alphabet.map { prefix + String($0) } }
            texts += frontier
        }
        var generator = SystemRandomNumberGenerator()
        let numeric = Array("0123456789_+-.:eEoxX")
        for length in 4...12 {
            for _ in 0..<3000 {
                let pool = Bool.random(using: &generator) ? numeric : alphabet
                texts.append(String((0..<length).map { _ in pool.randomElement(using: &generator) ?? "0" }))
            }
        }
        var disagreements: [String] = []
        for text in texts where YAMLImplicitType.of(text) != Self.yams(text) {
            disagreements.append(text.debugDescription)
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
    }

    @Test func quotedAndTaggedScalarsInAConfig() throws {
        let value = try YAMLLoader.load(
            """
            a: 8080
            b: "8080"
            c: !!str 8080
            d: yes
            e: 'on'
            f: 1.5
            g: ~
            h: 0x10
            i: |
              text
            j: end
            """)
        guard case .map(let map) = value else {
            Issue.record("not a map: \(value)")
            return
        }
        #expect(map["a"] == .int(8080))
        #expect(map["b"] == .string("8080"))
        #expect(map["c"] == .string("8080"))
        #expect(map["d"] == .bool(true))
        #expect(map["e"] == .string("on"))
        #expect(map["f"] == .double(1.5))
        #expect(map["g"] == .null)
        #expect(map["h"] == .int(16))
        #expect(map["i"] == .string("text\n"))
        // A quoted scalar is a string for Yams' own resolver too.
        #expect(try Yams.compose(yaml: "e: 'on'")?["e"]?.tag.description == "tag:yaml.org,2002:str")
        #expect(try Yams.compose(yaml: "e: on")?["e"]?.tag.description == "tag:yaml.org,2002:bool")
    }
}
