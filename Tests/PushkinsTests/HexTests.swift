import Foundation
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

@Suite struct HexTests {
    /// Every byte value, from contiguous storage (an array, `Data`) and from a plain sequence.
    @Test func everyByteIsTwoLowercaseDigits() {
        let all = (0...255).map { UInt8($0) }
        let expected = all.map { String(format: "%02x", $0) }.joined()
        #expect(Hex.encode(all) == expected)
        #expect(Hex.encode(Data(all)) == expected)
        #expect(Hex.encode(all.lazy.map { $0 }) == expected)
        var appended: [UInt8] = Array("0x".utf8)
        Hex.append(all, to: &appended)
        #expect(String(decoding: appended, as: UTF8.self) == "0x" + expected)
        #expect(Hex.encode([UInt8]()) == "")
    }

    /// A prefix (Status's `0x`) leads the digits, from either path, and alone for no bytes.
    @Test func aPrefixLeadsTheDigits() {
        #expect(Hex.encode([0x00, 0xAB, 0xFF], prefix: "0x") == "0x00abff")
        #expect(Hex.encode([0x00, 0xAB, 0xFF].lazy.map { $0 }, prefix: "0x") == "0x00abff")
        #expect(Hex.encode(Data([0x10]), prefix: "0x") == "0x10")
        #expect(Hex.encode([UInt8](), prefix: "0x") == "0x")
        #expect(Hex.encode([0x0F], prefix: "#") == "#0f", "a one-character prefix")
        #expect(Hex.encode([0x0F].lazy.map { $0 }, prefix: "#") == "#0f")
    }
}
