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
        var kept: [UInt8] = []
        kept.reserveCapacity(pushkey.utf8.count)
        for byte in pushkey.utf8 where isBase64(byte) { kept.append(byte) }
        guard let data = Data(base64Encoded: Data(kept)), !data.isEmpty else { return nil }
        return Hex.encode(data)
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
