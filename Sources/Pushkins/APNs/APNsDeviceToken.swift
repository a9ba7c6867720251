import Foundation

/// Turns a pushkey into the APNs device token of the request path.
public enum APNsDeviceToken {
    /// APNs tokens are 32 bytes today; Apple reserves the right to grow them, up to 100 bytes.
    public static let maxHexLength = 200

    /// With `convertToHex` (Sygnal's default), the pushkey is base64 (standard alphabet;
    /// characters outside it are discarded, as Python's lenient decoder does) and becomes lowercase
    /// hex. Returns nil when it does not decode, so the pushkey can be rejected.
    public static func token(fromPushkey pushkey: String, convertToHex: Bool) -> String? {
        guard convertToHex else { return pushkey.isEmpty ? nil : pushkey }
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
        let kept = String(pushkey.filter { alphabet.contains($0) })
        guard let data = Data(base64Encoded: kept), !data.isEmpty else { return nil }
        return Hex.encode(data)
    }
}
