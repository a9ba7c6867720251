import Crypto
package import FoundationEssentials
import HeraldCore
import HeraldUpstream
import Synchronization
import _CryptoExtras

/// A Huawei service-account key file (the JSON the HUAWEI Developers console issues) and the
/// PS256-signed JWT that HarmonyOS's Push Kit API takes as its bearer token, with no exchange for
/// an access token (docs/compatibility/hms.md, "What is sent").
package struct HMSServiceAccount: Sendable {
    package var projectId: String?
    package var keyId: String
    /// `sub_account`: the JWT's `iss`.
    package var subAccount: String
    /// The JWT's `aud`.
    package var tokenURI: String
    let key: _RSA.Signing.PrivateKey

    package static let defaultTokenURI = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    package struct LoadError: Error, CustomStringConvertible {
        package var description: String
    }

    package static func load(path: String) throws -> HMSServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else { throw LoadError(description: "cannot read '\(path)'") }
        guard let json = try? JSONParser.parse(Array(data)) else { throw LoadError(description: "'\(path)' is not JSON") }
        guard let keyId = json["key_id"]?.stringValue, let subAccount = json["sub_account"]?.stringValue,
            let pem = json["private_key"]?.stringValue
        else {
            throw LoadError(description: "'\(path)' lacks key_id, sub_account or private_key (is it a Huawei service-account key?)")
        }
        guard let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) else {
            throw LoadError(description: "'\(path)': private_key is not an RSA key of 2048 bits or more")
        }
        return HMSServiceAccount(
            projectId: json["project_id"]?.stringValue, keyId: keyId, subAccount: subAccount,
            tokenURI: json["token_uri"]?.stringValue ?? defaultTokenURI, key: key)
    }

    /// The bearer JWT issued at `now`, valid `lifetime` seconds (Huawei refuses more than a day).
    package func jwt(now: Date, lifetime: Int64 = 3600) throws -> String {
        let header: JSONValue = ["kid": .string(keyId), "typ": "JWT", "alg": "PS256"]
        let iat = Int64(now.timeIntervalSince1970)
        let claims: JSONValue = ["iss": .string(subAccount), "aud": .string(tokenURI), "iat": .int(iat), "exp": .int(iat + lifetime)]
        let signingInput = JWT.encodedPart(header) + "." + JWT.encodedPart(claims)
        let signature = try key.signature(for: SHA256.hash(data: Data(signingInput.utf8)), padding: .PSS)
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}

/// The service account's JWT as an upstream credential: made once and reused until a minute
/// before it ends, and dropped at once when Huawei refuses it (`80200005`, 401): the next request
/// signs a new one.
final class HMSJWTCredential: UpstreamCredential {
    private let account: HMSServiceAccount
    private let clock: any HeraldClock
    private let current = Mutex(RefusableValue())
    static let lifetime: Int64 = 3600

    init(account: HMSServiceAccount, clock: any HeraldClock) {
        self.account = account
        self.clock = clock
    }

    func value() async throws(UpstreamPreparationError) -> String {
        let now = clock.date
        if let held = current.withLock({ $0.valid(at: now, margin: 60) }) { return held }
        do {
            let token = try account.jwt(now: now, lifetime: Self.lifetime)
            current.withLock { $0.store(token, expires: now.addingTimeInterval(Double(Self.lifetime))) }
            return token
        } catch {
            throw .permanent(.localError("cannot sign the Huawei service-account JWT"))
        }
    }

    func refuse(_ value: String) async -> CredentialRefusal { current.withLock { $0.refuse(value) } }

    var whatToCheck: String {
        "service_account_file: that its key (key_id \(account.keyId)) is enabled for Push Kit, that project_id is this account's project, and the clock of this host"
    }
}
