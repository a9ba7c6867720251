import Crypto
import Foundation
import HeraldCore
import HeraldUpstream

/// Message encryption for Web Push: `aes128gcm` (RFC 8188) with the key derivation of RFC 8291.
package enum WebPushEncryption {
    /// Header (86 bytes) + one record's padding delimiter (1) + AEAD tag (16).
    package static let overhead = 86 + 1 + 16
    /// Push services must accept 4096-byte bodies (RFC 8030 §7.2); so 3993 bytes of plaintext.
    package static let maxPlaintext = 4096 - overhead

    package enum Error: Swift.Error, Equatable {
        case invalidPublicKey
        case invalidAuthSecret
        case malformedBody
        case decryptionFailed
    }

    /// Encrypts `plaintext` for a subscription. `salt` and `senderKey` are fresh per message unless
    /// given (the known-answer tests give RFC 8291's).
    package static func encrypt(
        _ plaintext: [UInt8], p256dh: [UInt8], authSecret: [UInt8],
        salt: [UInt8]? = nil, senderKey: P256.KeyAgreement.PrivateKey? = nil, recordSize: UInt32 = 4096
    ) throws -> [UInt8] {
        guard authSecret.count == 16 else { throw Error.invalidAuthSecret }
        guard p256dh.count == 65, let uaPublic = try? P256.KeyAgreement.PublicKey(x963Representation: p256dh) else {
            throw Error.invalidPublicKey
        }
        let asPrivate = senderKey ?? freshSenderKey()
        let asPublic = [UInt8](asPrivate.publicKey.x963Representation)
        let salt = salt ?? SecureRandom.bytes(16)
        let shared = try asPrivate.sharedSecretFromKeyAgreement(with: uaPublic)
        let (cek, nonce) = try deriveKeys(shared: shared, authSecret: authSecret, uaPublic: p256dh, asPublic: asPublic, salt: salt)

        var record = plaintext
        record.append(0x02)  // last-record delimiter, no padding
        let sealed = try AES.GCM.seal(record, using: cek, nonce: nonce)

        var body: [UInt8] = []
        body.reserveCapacity(86 + record.count + 16)
        body.append(contentsOf: salt)
        body.append(contentsOf: withUnsafeBytes(of: recordSize.bigEndian, Array.init))
        body.append(UInt8(asPublic.count))
        body.append(contentsOf: asPublic)
        body.append(contentsOf: sealed.ciphertext)
        body.append(contentsOf: sealed.tag)
        return body
    }

    /// Decrypts a single-record `aes128gcm` body as a user agent would (used by the fake push
    /// service and the tests).
    package static func decrypt(_ body: [UInt8], uaPrivate: P256.KeyAgreement.PrivateKey, authSecret: [UInt8]) throws -> [UInt8] {
        guard body.count >= 21 else { throw Error.malformedBody }
        let salt = Array(body[0..<16])
        let idLength = Int(body[20])
        guard body.count >= 21 + idLength + 17 else { throw Error.malformedBody }
        let asPublic = Array(body[21..<(21 + idLength)])
        guard let senderPublic = try? P256.KeyAgreement.PublicKey(x963Representation: asPublic) else { throw Error.malformedBody }
        let uaPublic = [UInt8](uaPrivate.publicKey.x963Representation)
        let shared = try uaPrivate.sharedSecretFromKeyAgreement(with: senderPublic)
        let (cek, nonce) = try deriveKeys(shared: shared, authSecret: authSecret, uaPublic: uaPublic, asPublic: asPublic, salt: salt)
        let record = body[(21 + idLength)...]
        guard let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: record.dropLast(16), tag: record.suffix(16)),
            let opened = try? AES.GCM.open(box, using: cek)
        else { throw Error.decryptionFailed }
        var plain = [UInt8](opened)
        // Strip padding: trailing zeros, then the delimiter (2 for the last record).
        while let last = plain.last, last == 0 { plain.removeLast() }
        guard plain.last == 0x02 else { throw Error.decryptionFailed }
        plain.removeLast()
        return plain
    }

    /// A new sender key for one message: a uniformly random scalar in [1, n-1].
    ///
    /// Built from 32 random bytes (a value that is zero or not below the group order, odds about
    /// 2^-32, is drawn again) rather than with `PrivateKey()`: that initialiser runs BoringSSL's
    /// FIPS pairwise test (an ECDSA signature and its verification) on every key, and by default
    /// also regenerates until the key is compact-representable, which Web Push does not need (the
    /// public key travels uncompressed). The test and the regeneration cost more than the ECDH.
    static func freshSenderKey() -> P256.KeyAgreement.PrivateKey {
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: SecureRandom.bytes(32)) { return key }
        }
    }

    /// RFC 8291 §3.4's key derivation, with swift-crypto's HKDF-SHA-256: the auth secret and the
    /// ECDH secret give the input keying material; the salt and it give the content-encryption key
    /// and the nonce. (A hand-written HMAC saved about 1 % of a notify: not worth a second
    /// implementation of a primitive.)
    private static func deriveKeys(
        shared: SharedSecret, authSecret: [UInt8], uaPublic: [UInt8], asPublic: [UInt8], salt: [UInt8]
    ) throws -> (SymmetricKey, AES.GCM.Nonce) {
        let ikm = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: authSecret, sharedInfo: Self.keyInfoLabel + uaPublic + asPublic, outputByteCount: 32)
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Self.cekInfo, outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Self.nonceInfo, outputByteCount: 12)
        return (cek, try nonce.withUnsafeBytes { try AES.GCM.Nonce(data: Array($0)) })
    }

    private static let keyInfoLabel = Array("WebPush: info\0".utf8)
    private static let cekInfo = Array("Content-Encoding: aes128gcm\0".utf8)
    private static let nonceInfo = Array("Content-Encoding: nonce\0".utf8)
}
