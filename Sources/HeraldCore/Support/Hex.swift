/// Lowercase hexadecimal text of bytes, without `String(format:)`.
package enum Hex {
    /// The lowercase hexadecimal text of `bytes`, after `prefix` (Status's `0x`), in one string.
    package static func encode(_ bytes: some Sequence<UInt8>, prefix: StaticString = "") -> String {
        // Contiguous bytes (an array, `Data`) are written straight into the string's storage.
        // `withUTF8Buffer` reads either form a `StaticString` may take; `utf8Start` traps unless it
        // holds a pointer (a string made from one Unicode scalar holds the scalar).
        let lead = prefix.utf8CodeUnitCount
        let direct = bytes.withContiguousStorageIfAvailable { input in
            String(unsafeUninitializedCapacity: lead + input.count * 2) { out in
                prefix.withUTF8Buffer { for (i, byte) in $0.enumerated() { out[i] = byte } }
                for (i, byte) in input.enumerated() {
                    out[lead + 2 * i] = digit(byte >> 4)
                    out[lead + 2 * i + 1] = digit(byte & 0x0F)
                }
                return lead + input.count * 2
            }
        }
        if let direct { return direct }
        var out: [UInt8] = []
        out.reserveCapacity(lead + bytes.underestimatedCount * 2)
        prefix.withUTF8Buffer { out.append(contentsOf: $0) }
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the hexadecimal text of `bytes` to `out`, for callers assembling a longer text.
    package static func append(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for byte in bytes {
            out.append(digit(byte >> 4))
            out.append(digit(byte & 0x0F))
        }
    }

    @inline(__always)
    package static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &- 10 &+ nibble
    }
}
