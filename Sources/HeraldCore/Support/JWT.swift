package import Crypto
import FoundationEssentials

/// Compact JWS tokens (RFC 7515) signed with ES256, for VAPID and APNs. (Google OAuth's RS256
/// assertion is made in `GoogleServiceAccount`.)
package enum JWT {
    /// Signs `header.claims` with ES256; the signature is raw R||S as JOSE requires.
    package static func es256(header: JSONValue, claims: JSONValue, key: P256.Signing.PrivateKey) throws -> String {
        let signingInput = encodedPart(header) + "." + encodedPart(claims)
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    package static func encodedPart(_ value: JSONValue) -> String {
        Base64URL.encode(JSONWriter.serialize(value))
    }

    /// The three parts of a compact token, decoded; nil if it is not one.
    package static func decode(_ token: String) -> (header: JSONValue, claims: JSONValue, signingInput: String, signature: [UInt8])? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(String(parts[0])),
            let claimBytes = Base64URL.decode(String(parts[1])),
            let signature = Base64URL.decode(String(parts[2])),
            let header = try? JSONParser.parse(headerBytes),
            let claims = try? JSONParser.parse(claimBytes)
        else { return nil }
        return (header, claims, "\(parts[0]).\(parts[1])", signature)
    }

    /// Verifies an ES256 token's signature with `publicKey`.
    package static func verifyES256(_ token: String, publicKey: P256.Signing.PublicKey) -> (header: JSONValue, claims: JSONValue)? {
        guard let parts = decode(token),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parts.signature),
            publicKey.isValidSignature(signature, for: Data(parts.signingInput.utf8))
        else { return nil }
        return (parts.header, parts.claims)
    }
}
