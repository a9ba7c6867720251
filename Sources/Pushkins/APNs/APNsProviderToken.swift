import Crypto
import Foundation
import HeraldCore
import HeraldUpstream
import Synchronization

/// The provider authentication token (ES256 JWT, `kid` = key id, `iss` = team, `iat` = now),
/// reused for 50 minutes (Apple refuses tokens older than 60) and re-minted on demand after
/// `ExpiredProviderToken`.
package final class APNsProviderToken: UpstreamCredential {
    private let key: P256.Signing.PrivateKey
    private let keyId: String
    private let teamId: String
    private let lifetime: TimeInterval
    private let current = Mutex<(token: String, issued: Date)?>(nil)

    package init(key: P256.Signing.PrivateKey, keyId: String, teamId: String, lifetime: TimeInterval = 50 * 60) {
        self.key = key
        self.keyId = keyId
        self.teamId = teamId
        self.lifetime = lifetime
    }

    /// The current token; `refreshingFrom` forces a new one unless another caller already replaced it.
    package func token(now: Date = Date(), refreshingFrom stale: String? = nil) throws -> String {
        if let cached = current.withLock({ $0 }), now.timeIntervalSince(cached.issued) < lifetime, cached.token != stale {
            return cached.token
        }
        let token = try JWT.es256(
            header: ["alg": "ES256", "kid": .string(keyId)],
            claims: ["iss": .string(teamId), "iat": .int(Int64(now.timeIntervalSince1970))],
            key: key)
        current.withLock { $0 = (token, now) }
        return token
    }
}

extension APNsProviderToken {
    /// The token to send; one Apple refused (`ExpiredProviderToken`) is re-minted.
    package func value(replacing refused: String?) async throws(UpstreamPreparationError) -> String {
        do {
            return try token(refreshingFrom: refused)
        } catch {
            throw .permanent(.localError("cannot sign the APNs provider token"))
        }
    }
}
