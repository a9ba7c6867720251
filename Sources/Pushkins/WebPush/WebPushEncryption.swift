package import Crypto
import FoundationEssentials
import HeraldCore

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

    /// RFC 8291 §3.4's key derivation. Every HKDF-SHA-256 step here wants at most 32 bytes, so each
    /// is one HMAC (RFC 5869 §2): Extract is `HMAC(salt, IKM)`, and Expand's first block,
    /// `HMAC(PRK, info || 0x01)`, is all of its output. Spelt out, it costs five HMACs and none of
    /// the generic key wrapping of `HKDF` (whose calls were about 6 % of a Web Push notify's samples).
    private static func deriveKeys(
        shared: SharedSecret, authSecret: [UInt8], uaPublic: [UInt8], asPublic: [UInt8], salt: [UInt8]
    ) throws -> (SymmetricKey, AES.GCM.Nonce) {
        let ecdhSecret = shared.withUnsafeBytes { Array($0) }
        // PRK_key = HKDF-Extract(auth_secret, ecdh_secret); IKM = HKDF-Expand(PRK_key, key_info, 32)
        let prkKey = hmac(key: authSecret, ecdhSecret)
        let ikm = hmac(key: prkKey, Self.keyInfoLabel + uaPublic + asPublic + [1])
        // PRK = HKDF-Extract(salt, IKM); CEK and NONCE are its expansions to 16 and 12 bytes.
        let prk = hmac(key: salt, ikm)
        let cek = SymmetricKey(data: hmac(key: prk, Self.cekInfo)[0..<16])
        let nonce = try AES.GCM.Nonce(data: hmac(key: prk, Self.nonceInfo)[0..<12])
        return (cek, nonce)
    }

    /// HMAC-SHA-256 (RFC 2104) as two one-shot hashes: `H((K ⊕ opad) || H((K ⊕ ipad) || m))`.
    /// The keys here are 16 or 32 bytes (a key longer than SHA-256's 64-byte block would be hashed
    /// first). swift-crypto's `HMAC` wraps the key and keeps two hash contexts, which cost this
    /// derivation more than its ten hashes (1.9 against 1.2 µs an HMAC in one measurement). Checked
    /// again through bench/run.sh, alternating builds three times: a Web Push notify took 222–229 µs
    /// of CPU with this, 242–250 with swift-crypto's `HMAC` and 243–254 with its `HKDF`, so it
    /// stays, with RFC 4231's vectors and RFC 8291's example as its tests.
    static func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        let key = key.count > 64 ? Array(SHA256.hash(data: key)) : key
        var inner = [UInt8](repeating: 0x36, count: 64 + message.count)
        var outer = [UInt8](repeating: 0x5C, count: 64 + SHA256.byteCount)
        for (i, byte) in key.enumerated() {
            inner[i] ^= byte
            outer[i] ^= byte
        }
        inner.replaceSubrange(64..., with: message)
        SHA256.hash(data: inner).withUnsafeBytes { outer.replaceSubrange(64..., with: $0) }
        return Array(SHA256.hash(data: outer))
    }

    private static let keyInfoLabel = Array("WebPush: info\0".utf8)
    /// The infos with Expand's block counter (0x01) already appended.
    private static let cekInfo = Array("Content-Encoding: aes128gcm\0\u{1}".utf8)
    private static let nonceInfo = Array("Content-Encoding: nonce\0\u{1}".utf8)
}
