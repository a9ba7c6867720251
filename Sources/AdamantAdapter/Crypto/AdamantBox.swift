import CSodium
import HeraldCore
import Pushkins

/// ADAMANT's message encryption (AIP-4; signals too): NaCl `crypto_box` (X25519, XSalsa20,
/// Poly1305) between the two accounts' Ed25519 keys converted to Curve25519; the ciphertext is
/// the 16-byte tag then the encrypted bytes, hex in `asset.chat.message`, with the 24-byte nonce hex
/// in `asset.chat.own_message`.
package enum AdamantBox {
    package enum Failure: Error, Equatable {
        case badKey
        case badNonce
        case authenticationFailed
    }

    /// The Curve25519 public key of an Ed25519 public key.
    package static func curvePublic(_ edPublic: [UInt8]) throws(Failure) -> [UInt8] {
        guard edPublic.count == 32, AdamantSodium.ready else { throw .badKey }
        var out = [UInt8](repeating: 0, count: 32)
        guard crypto_sign_ed25519_pk_to_curve25519(&out, edPublic) == 0 else { throw .badKey }
        return out
    }

    /// The Curve25519 secret of an Ed25519 private key (only its first 32 bytes matter).
    package static func curveSecret(_ edPrivate: [UInt8]) throws(Failure) -> [UInt8] {
        guard edPrivate.count == 64 || edPrivate.count == 32, AdamantSodium.ready else { throw .badKey }
        var full = edPrivate
        if full.count == 32 {
            // A bare seed: libsodium's conversion reads the seed half of a NaCl private key.
            full += [UInt8](repeating: 0, count: 32)
        }
        var out = [UInt8](repeating: 0, count: 32)
        guard crypto_sign_ed25519_sk_to_curve25519(&out, full) == 0 else { throw .badKey }
        return out
    }

    /// Seals `plaintext` from the sender's private key to the recipient's public key.
    package static func seal(_ plaintext: [UInt8], nonce: [UInt8], senderPrivate: [UInt8], recipientPublic: [UInt8]) throws(Failure)
        -> [UInt8]
    {
        guard nonce.count == 24 else { throw .badNonce }
        let secret = try curveSecret(senderPrivate)
        let peer = try curvePublic(recipientPublic)
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        guard crypto_box_easy(&out, plaintext, UInt64(plaintext.count), nonce, peer, secret) == 0 else { throw .badKey }
        return out
    }

    /// Opens a message sent by `senderPublic` to the owner of `recipientPrivate`.
    package static func open(_ ciphertext: [UInt8], nonce: [UInt8], senderPublic: [UInt8], recipientPrivate: [UInt8]) throws(Failure)
        -> [UInt8]
    {
        guard nonce.count == 24 else { throw .badNonce }
        guard ciphertext.count >= 16 else { throw .authenticationFailed }
        let secret = try curveSecret(recipientPrivate)
        let peer = try curvePublic(senderPublic)
        var out = [UInt8](repeating: 0, count: ciphertext.count - 16)
        guard crypto_box_open_easy(&out, ciphertext, UInt64(ciphertext.count), nonce, peer, secret) == 0 else {
            throw .authenticationFailed
        }
        return out
    }

    /// 24 random bytes.
    package static func randomNonce() -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 24)
        _ = AdamantSodium.ready
        randombytes_buf(&nonce, 24)
        return nonce
    }
}
