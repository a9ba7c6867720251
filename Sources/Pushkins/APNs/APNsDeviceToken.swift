import FoundationEssentials
import HeraldCore

/// Turns a pushkey into the APNs device token of the request path.
package enum APNsDeviceToken {
    /// APNs tokens are 32 bytes today; Apple reserves the right to grow them, up to 100 bytes.
    package static let maxHexLength = 200

    /// With `convertToHex` (Sygnal's default), the pushkey is base64 (standard alphabet;
    /// characters outside it are discarded, as Python's lenient decoder does) and becomes lowercase
    /// hex. Returns nil when it does not decode, so the pushkey can be rejected.
    package static func token(fromPushkey pushkey: String, convertToHex: Bool) -> String? {
        guard convertToHex else { return pushkey.isEmpty ? nil : pushkey }
        if let hex = pushkey.utf8.withContiguousStorageIfAvailable(canonicalHex) ?? nil { return hex }
        var kept: [UInt8] = []
        kept.reserveCapacity(pushkey.utf8.count)
        for byte in pushkey.utf8 where isBase64(byte) { kept.append(byte) }
        guard let data = Data(base64Encoded: Data(kept)), !data.isEmpty else { return nil }
        return Hex.encode(data)
    }

    /// Canonical base64 (a multiple of 4 characters of the standard alphabet, `=` only as the last
    /// one or two, the bits they leave unused zero), as the pushkeys of iOS devices are: decoded
    /// straight into the hex text, with no bytes between. It decodes the same in any decoder, so anything
    /// else (nil here) goes the general way above.
    static func canonicalHex(_ text: UnsafeBufferPointer<UInt8>) -> String? {
        let count = text.count
        guard count > 0, count % 4 == 0 else { return nil }
        let padding = text[count - 1] == UInt8(ascii: "=") ? (text[count - 2] == UInt8(ascii: "=") ? 2 : 1) : 0
        let length = count / 4 * 3 - padding
        guard length > 0 else { return nil }
        for index in 0..<(count - padding) where sextet(text[index]) == nil { return nil }
        let last = count - padding - 1
        if padding == 1, let value = sextet(text[last]), value & 0x03 != 0 { return nil }
        if padding == 2, let value = sextet(text[last]), value & 0x0F != 0 { return nil }
        return String(unsafeUninitializedCapacity: length * 2) { out in
            var written = 0
            var group = 0
            while group < count {
                var bits: UInt32 = 0
                for offset in 0..<4 {
                    let character = text[group + offset]
                    bits = bits << 6 | UInt32(character == UInt8(ascii: "=") ? 0 : (sextet(character) ?? 0))
                }
                var shift: UInt32 = 16
                while written < length {
                    let byte = UInt8(truncatingIfNeeded: bits >> shift)
                    out[2 * written] = Hex.digit(byte >> 4)
                    out[2 * written + 1] = Hex.digit(byte & 0x0F)
                    written += 1
                    if shift == 0 { break }
                    shift -= 8
                }
                group += 4
            }
            return length * 2
        }
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }

    /// The standard base64 alphabet and `=`.
    private static func isBase64(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): true
        default: false
        }
    }
}
