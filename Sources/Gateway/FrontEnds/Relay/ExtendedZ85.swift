/// toot-relay's extended Z85 (docs/webpush-relay.md, "The APNs request"): ZeroMQ's Z85 alphabet; each
/// 4-byte group, big-endian, becomes 5 digits; a final group of 1–3 bytes becomes that many digits
/// plus one. The app's notification extension decodes it back.
enum ExtendedZ85 {
    static let alphabet: [UInt8] = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 4 * 5 + 5)
        var index = 0
        while index < bytes.count {
            let count = min(4, bytes.count - index)
            var value: UInt32 = 0
            for offset in 0..<count { value = value << 8 | UInt32(bytes[index + offset]) }
            let digits = count == 4 ? 5 : count + 1
            var group = [UInt8](repeating: 0, count: digits)
            for position in stride(from: digits - 1, through: 0, by: -1) {
                group[position] = alphabet[Int(value % 85)]
                value /= 85
            }
            out.append(contentsOf: group)
            index += count
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// What the app does: 5 characters → 4 bytes, a final group of k = 2…4 characters → k − 1 bytes.
    /// Nil for characters outside the alphabet, a lone final character, or a group too large.
    static func decode(_ text: String) -> [UInt8]? {
        var table = [Int](repeating: -1, count: 256)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = value }
        let characters = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        while index < characters.count {
            let count = min(5, characters.count - index)
            guard count >= 2 else { return nil }
            var value: UInt64 = 0
            for offset in 0..<count {
                let digit = table[Int(characters[index + offset])]
                guard digit >= 0 else { return nil }
                value = value * 85 + UInt64(digit)
            }
            let byteCount = count == 5 ? 4 : count - 1
            guard value < UInt64(1) << UInt64(8 * byteCount) else { return nil }
            for position in stride(from: byteCount - 1, through: 0, by: -1) {
                out.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * position)))
            }
            index += count
        }
        return out
    }
}
