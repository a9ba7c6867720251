import Foundation

/// A VAPID `Authorization` as a push service reads it (RFC 8292 §3): `vapid t=<JWT>,k=<key>`.
enum VAPIDAuthorization {
    /// The token and the key, or nil when the header is not a VAPID one; either may be missing.
    static func parts(_ header: String?) -> (token: String?, key: String?)? {
        guard let header, header.hasPrefix("vapid ") else { return nil }
        var token: String?
        var key: String?
        for part in header.dropFirst(6).split(separator: ",") {
            let item = part.trimmingCharacters(in: .whitespaces)
            if item.hasPrefix("t=") { token = String(item.dropFirst(2)) }
            if item.hasPrefix("k=") { key = String(item.dropFirst(2)) }
        }
        return (token, key)
    }
}
