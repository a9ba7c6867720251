package import Crypto
package import FoundationEssentials
package import HeraldCore
package import HeraldUpstream
import Synchronization

/// The provider authentication token (ES256 JWT, `kid` = key id, `iss` = team, `iat` = now),
/// reused for 50 minutes (Apple refuses tokens older than 60), and dropped at once when Apple
/// refuses it (`ExpiredProviderToken`, `InvalidProviderToken`): the next request signs a new one.
package final class APNsProviderToken: UpstreamCredential {
    private let key: P256.Signing.PrivateKey
    private let keyId: String
    private let teamId: String
    private let lifetime: TimeInterval
    private let clock: any HeraldClock
    private let current = Mutex(RefusableValue())

    package init(key: P256.Signing.PrivateKey, keyId: String, teamId: String, clock: any HeraldClock, lifetime: TimeInterval = 50 * 60) {
        self.key = key
        self.keyId = keyId
        self.teamId = teamId
        self.clock = clock
        self.lifetime = lifetime
    }

    /// The `authorization` header's value, `bearer` and the token held, or a new one signed now:
    /// made once per token, not per request.
    package func authorization() throws -> String {
        let now = clock.date
        if let held = current.withLock({ $0.valid(at: now, margin: 0) }) { return held }
        let value = "bearer " + (try Self.sign(key: key, keyId: keyId, teamId: teamId, issuedAt: now))
        current.withLock { $0.store(value, expires: now.addingTimeInterval(lifetime)) }
        return value
    }

    /// A provider token issued at `issuedAt`, held by no credential (tests, the fake ceiling).
    package static func sign(key: P256.Signing.PrivateKey, keyId: String, teamId: String, issuedAt: Date) throws -> String {
        try JWT.es256(
            header: ["alg": "ES256", "kid": .string(keyId)],
            claims: ["iss": .string(teamId), "iat": .int(Int64(issuedAt.timeIntervalSince1970))],
            key: key)
    }
}

extension APNsProviderToken {
    package func value() async throws(UpstreamPreparationError) -> String {
        do {
            return try authorization()
        } catch {
            throw .permanent(.localError("cannot sign the APNs provider token"))
        }
    }

    package func refuse(_ value: String) async -> CredentialRefusal { current.withLock { $0.refuse(value) } }

    package var whatToCheck: String {
        "that key_id (\(keyId)) and team_id (\(teamId)) are the key file's, that the key is enabled for APNs in the Apple developer account, and the clock of this host"
    }
}
