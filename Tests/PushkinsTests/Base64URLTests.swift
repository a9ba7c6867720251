import Foundation
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

/// Herald's byte-level base64url against Foundation's decoder, the implementation it replaced.
@Suite struct Base64URLTests {
    /// What Herald accepted before: trim spaces, map the URL alphabet to the standard one, drop
    /// padding, pad again, and let Foundation decide.
    static func foundationDecode(_ text: String) -> [UInt8]? {
        var s = text.trimmingCharacters(in: .whitespaces)
            .replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        while s.hasSuffix("=") { s.removeLast() }
        guard s.utf8.count % 4 != 1 else { return nil }
        s += String(repeating: "=", count: (4 - s.utf8.count % 4) % 4)
        return Data(base64Encoded: s).map { [UInt8]($0) }
    }

    @Test func encodesWithTheURLAlphabetAndNoPadding() {
        #expect(Base64URL.encode([]) == "")
        #expect(Base64URL.encode([0xFB]) == "-w")
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.encode(Array("any carnal pleasure".utf8)) == "YW55IGNhcm5hbCBwbGVhc3VyZQ")
    }

    @Test func decodesWhatItEncodes() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64URL.encode(bytes)
            #expect(Base64URL.decode(text) == bytes)
            #expect(Base64URL.decode(Data(bytes).base64EncodedString()) == bytes)
        }
    }

    @Test func acceptsAndRefusesWhatFoundationDid() {
        let fixed = [
            "", "=", "A", "AA", "AB", "QR", "QQ==", "QQ=", "QQ", " QQ\t", "\u{00A0}QQ", "QQ\u{2003}", "Q Q", "QQ\n", "\nQQ",
            "Q=Q=", "QQ==QQ", "====", "QUJD", "QUJ", "QU", "-_-_", "+/+/", "-/+_", "QUJD=", "QUJD==", "QUJD===", "é", "QQé",
            ".", "QQ.A", "QQ==\u{00A0}",
        ]
        for text in fixed {
            #expect(Base64URL.decode(text) == Self.expected(text), "\(text.debugDescription)")
        }
        let pieces = ["A", "Q", "R", "w", "8", "-", "_", "+", "/", "=", " ", "\t", "\n", ".", "é", "\u{00A0}"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20000 {
            let length = Int.random(in: 0...9, using: &generator)
            let text = (0..<length).map { _ in pieces.randomElement(using: &generator) ?? "A" }.joined()
            #expect(Base64URL.decode(text) == Self.expected(text), "\(text.debugDescription)")
        }
    }

    /// Foundation's answer, except that padding inside the text is refused: Foundation decoded
    /// "QQ=R" as two bytes, which no encoder writes.
    static func expected(_ text: String) -> [UInt8]? {
        var core = Substring(text.trimmingCharacters(in: .whitespaces))
        while core.hasSuffix("=") { core.removeLast() }
        return core.contains("=") ? nil : foundationDecode(text)
    }

    @Test func refusesPaddingInside() {
        #expect(Base64URL.decode("QQ=R") == nil)
        #expect(Base64URL.decode("QQ==QUJD") == nil)
        #expect(Base64URL.decode("QQ==") == [65])
    }
}
