/// Lowercase hexadecimal text of bytes, without `String(format:)`.
package enum Hex {
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        // Contiguous bytes (an array, `Data`) are written straight into the string's storage.
        let direct = bytes.withContiguousStorageIfAvailable { input in
            String(unsafeUninitializedCapacity: input.count * 2) { out in
                for (i, byte) in input.enumerated() {
                    out[2 * i] = digit(byte >> 4)
                    out[2 * i + 1] = digit(byte & 0x0F)
                }
                return input.count * 2
            }
        }
        if let direct { return direct }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
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
