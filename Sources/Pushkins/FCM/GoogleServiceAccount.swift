import Crypto
package import FoundationEssentials
import HeraldCore
import _CryptoExtras

/// A Google service-account key file, and the RS256-signed JWT bearer assertion
/// (RFC 7523) that exchanges it for an OAuth access token.
package struct GoogleServiceAccount: Sendable {
    package var clientEmail: String
    package var privateKeyId: String?
    package var tokenURI: String
    let key: _RSA.Signing.PrivateKey

    package static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    package struct LoadError: Error, CustomStringConvertible {
        package var description: String
    }

    package static func load(path: String) throws -> GoogleServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else { throw LoadError(description: "cannot read '\(path)'") }
        guard let json = try? JSONParser.parse(Array(data)) else { throw LoadError(description: "'\(path)' is not JSON") }
        guard let email = json["client_email"]?.stringValue, let pem = json["private_key"]?.stringValue else {
            throw LoadError(description: "'\(path)' lacks client_email or private_key (is it a service-account key?)")
        }
        guard let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) else {
            throw LoadError(description: "'\(path)': private_key is not an RSA key")
        }
        return GoogleServiceAccount(
            clientEmail: email, privateKeyId: json["private_key_id"]?.stringValue,
            tokenURI: json["token_uri"]?.stringValue ?? "https://oauth2.googleapis.com/token", key: key)
    }

    /// The signed assertion for the messaging scope, valid one hour.
    package func assertion(now: Date) throws -> String {
        var header: JSONObject = ["alg": "RS256", "typ": "JWT"]
        if let privateKeyId { header["kid"] = .string(privateKeyId) }
        let iat = Int64(now.timeIntervalSince1970)
        let claims: JSONValue = [
            "iss": .string(clientEmail), "scope": .string(Self.messagingScope), "aud": .string(tokenURI), "iat": .int(iat),
            "exp": .int(iat + 3600),
        ]
        let signingInput = JWT.encodedPart(.object(header)) + "." + JWT.encodedPart(claims)
        let signature = try key.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
