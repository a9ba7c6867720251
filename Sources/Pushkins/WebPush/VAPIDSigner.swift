package import Crypto
package import FoundationEssentials
import HeraldCore
import Synchronization

/// Builds `Authorization: vapid t=<JWT>,k=<key>` headers (RFC 8292), caching one token per
/// push-service origin until shortly before it expires.
package final class VAPIDSigner: Sendable {
    package let applicationServerKey: String
    private let key: P256.Signing.PrivateKey
    private let subject: String
    private let lifetime: TimeInterval
    private let cache = Mutex<[String: (header: String, expires: Date)]>([:])

    /// `lifetime` is capped at 24 h as RFC 8292 §2 requires; Sygnal uses 12 h.
    package init(key: P256.Signing.PrivateKey, contactEmail: String, lifetime: TimeInterval = 12 * 3600) {
        self.key = key
        self.applicationServerKey = VAPIDKey.applicationServerKey(key)
        self.subject = contactEmail.hasPrefix("mailto:") || contactEmail.hasPrefix("https:") ? contactEmail : "mailto:" + contactEmail
        self.lifetime = min(lifetime, 24 * 3600)
    }

    /// The header for `origin` (`scheme://host[:port]` of the endpoint).
    package func authorization(origin: String, now: Date) throws -> String {
        if let cached = cache.withLock({ $0[origin] }), cached.expires.timeIntervalSince(now) > lifetime / 4 {
            return cached.header
        }
        let expires = now.addingTimeInterval(lifetime)
        let claims: JSONValue = [
            "aud": .string(origin), "exp": .int(Int64(expires.timeIntervalSince1970)), "sub": .string(subject),
        ]
        let token = try JWT.es256(header: ["typ": "JWT", "alg": "ES256"], claims: claims, key: key)
        let header = "vapid t=\(token),k=\(applicationServerKey)"
        cache.withLock { entries in
            if entries.count > 10_000 { entries.removeAll() }
            entries[origin] = (header, expires)
        }
        return header
    }
}
