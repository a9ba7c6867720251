/// Lowercase hexadecimal text of bytes, without `String(format:)` (one lookup per nibble).
public enum Hex {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the hexadecimal text of `bytes` to `out`, for callers assembling a longer text.
    public static func append(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
    }
}
