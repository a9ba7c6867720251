import FoundationEssentials

extension UUID {
    /// The lowercase text form (8-4-4-4-12 hex digits), as APNs' `apns-id` and request ids use it.
    /// Written from the bytes directly: `uuidString.lowercased()` built two strings per request.
    package var lowercasedString: String {
        withUnsafeBytes(of: uuid) { bytes in
            var out: [UInt8] = []
            out.reserveCapacity(36)
            for group in Self.groups {
                if group.lowerBound > 0 { out.append(UInt8(ascii: "-")) }
                Hex.append(bytes[group], to: &out)
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// The byte ranges of the five dash-separated groups.
    private static let groups = [0..<4, 4..<6, 6..<8, 8..<10, 10..<16]
}
