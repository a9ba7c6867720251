import Foundation
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

@Suite struct SecureRandomTests {
    @Test func bytesHaveTheAskedLengthAndDiffer() {
        for count in [0, 1, 7, 8, 9, 16, 32, 33] {
            #expect(SecureRandom.bytes(count).count == count)
        }
        // Two 16-byte draws colliding, or a draw of all one value, has odds of about 2^-120.
        let draws = (0..<1000).map { _ in SecureRandom.bytes(16) }
        #expect(Set(draws).count == draws.count)
        #expect(draws.allSatisfy { Set($0).count > 1 })
        // Every bit position takes both values somewhere in the draws (the tail of a word too).
        for index in 0..<16 {
            let ored = draws.reduce(UInt8(0)) { $0 | $1[index] }
            let anded = draws.reduce(UInt8(0xFF)) { $0 & $1[index] }
            #expect(ored == 0xFF && anded == 0, "byte \(index)")
        }
    }

    @Test func uuidsAreVersion4WithRandomBitsElsewhere() throws {
        let ids = (0..<1000).map { _ in SecureRandom.uuid() }
        #expect(Set(ids).count == ids.count)
        var ored = [UInt8](repeating: 0, count: 16)
        var anded = [UInt8](repeating: 0xFF, count: 16)
        for id in ids {
            let text = id.lowercasedString
            // xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx, and Foundation reads it back as the same UUID.
            #expect(Array(text)[14] == "4")
            #expect("89ab".contains(Array(text)[19]))
            #expect(UUID(uuidString: text) == id)
            withUnsafeBytes(of: id.uuid) { bytes in
                for index in 0..<16 {
                    ored[index] |= bytes[index]
                    anded[index] &= bytes[index]
                }
            }
        }
        // Only the version nibble and the two variant bits are fixed.
        let fixedOnes: [Int: UInt8] = [6: 0x40, 8: 0x80]
        let fixedZeros: [Int: UInt8] = [6: 0xB0, 8: 0x40]
        for index in 0..<16 {
            #expect(ored[index] == 0xFF & ~(fixedZeros[index] ?? 0), "byte \(index)")
            #expect(anded[index] == (fixedOnes[index] ?? 0), "byte \(index)")
        }
    }

    /// The pool behind UUIDs hands out each byte once: draws of a size that does not divide its
    /// 512 bytes, across many refills, never repeat.
    @Test func thePoolNeverHandsOutTheSameBytesTwice() {
        var pool = SecureRandom.Pool()
        var draws: [[UInt8]] = []
        for _ in 0..<200 {
            var draw = [UInt8](repeating: 0, count: 100)
            draw.withUnsafeMutableBytes { pool.take(into: $0) }
            draws.append(draw)
        }
        #expect(Set(draws).count == draws.count)
        #expect(draws.allSatisfy { Set($0).count > 1 })
    }
}
