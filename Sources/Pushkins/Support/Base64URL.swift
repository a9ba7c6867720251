import Foundation

/// Base64url (RFC 4648 §5) without padding, as JOSE and Web Push use it.
public enum Base64URL {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url or standard base64, with or without padding. Returns nil for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        var s = text.trimmingCharacters(in: .whitespaces)
            .replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        while s.hasSuffix("=") { s.removeLast() }
        guard s.utf8.count % 4 != 1 else { return nil }
        s += String(repeating: "=", count: (4 - s.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: s) else { return nil }
        return [UInt8](data)
    }
}
