import FoundationEssentials

extension UUID {
    /// The lowercase text form (8-4-4-4-12 hex digits), as APNs' `apns-id` and request ids use it.
    /// Written from the bytes directly: `uuidString.lowercased()` built two strings per request.
    package var lowercasedString: String {
        withUnsafeBytes(of: uuid) { bytes in
            // Written into the string's own storage, with no string between.
            String(unsafeUninitializedCapacity: 36) { out in
                var at = 0
                for group in Self.groups {
                    if group.lowerBound > 0 {
                        out[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    for byte in bytes[group] {
                        out[at] = Hex.digit(byte >> 4)
                        out[at + 1] = Hex.digit(byte & 0x0F)
                        at += 2
                    }
                }
                return at
            }
        }
    }

    /// The byte ranges of the five dash-separated groups.
    private static let groups = [0..<4, 4..<6, 6..<8, 8..<10, 10..<16]
}
