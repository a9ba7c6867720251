package import Crypto
import FoundationEssentials
import HeraldCore
package import NIOCore

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
        _ plaintext: consuming [UInt8], p256dh: [UInt8], authSecret: [UInt8],
        salt: [UInt8]? = nil, senderKey: P256.KeyAgreement.PrivateKey? = nil, recordSize: UInt32 = 4096
    ) throws -> [UInt8] {
        let body = try encryptedBody(
            plaintext, p256dh: p256dh, authSecret: authSecret, salt: salt, senderKey: senderKey, recordSize: recordSize)
        return Array(body.readableBytesView)
    }

    /// `encrypt`'s body in a buffer of its exact size, as the request carries it.
    package static func encryptedBody(
        _ plaintext: consuming [UInt8], p256dh: [UInt8], authSecret: [UInt8],
        salt: [UInt8]? = nil, senderKey: P256.KeyAgreement.PrivateKey? = nil, recordSize: UInt32 = 4096
    ) throws -> ByteBuffer {
        guard authSecret.count == 16 else { throw Error.invalidAuthSecret }
        guard p256dh.count == 65, let uaPublic = try? P256.KeyAgreement.PublicKey(x963Representation: p256dh) else {
            throw Error.invalidPublicKey
        }
        let asPrivate = senderKey ?? freshSenderKey()
        let asPublic = asPrivate.publicKey.x963Representation
        let salt = salt ?? SecureRandom.bytes(16)
        let shared = try asPrivate.sharedSecretFromKeyAgreement(with: uaPublic)
        let (cek, nonce) = try deriveKeys(shared: shared, authSecret: authSecret, uaPublic: p256dh, asPublic: asPublic, salt: salt)

        var record = plaintext
        record.append(0x02)  // last-record delimiter, no padding
        let sealed = try AES.GCM.seal(record, using: cek, nonce: nonce)

        // The header (RFC 8188 §2.1): salt, record size, the sender key's length and the key.
        var body = ByteBufferAllocator().buffer(capacity: 86 + record.count + 16)
        body.writeBytes(salt)
        body.writeInteger(recordSize)
        body.writeInteger(UInt8(asPublic.count))
        body.writeBytes(asPublic)
        body.writeBytes(sealed.ciphertext)
        body.writeBytes(sealed.tag)
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
    /// the generic key wrapping of `HKDF` (whose calls were about 6 % of a Web Push notify's samples);
    /// each HMAC is fed its parts in place (`HMACSHA256`), so the derivation allocates its ten hash
    /// contexts and the two keys it returns, nothing else.
    private static func deriveKeys(
        shared: SharedSecret, authSecret: [UInt8], uaPublic: [UInt8], asPublic: some ContiguousBytes, salt: [UInt8]
    ) throws -> (SymmetricKey, AES.GCM.Nonce) {
        // PRK_key = HKDF-Extract(auth_secret, ecdh_secret); IKM = HKDF-Expand(PRK_key, key_info, 32)
        var prkKeyMAC = authSecret.withUnsafeBytes { HMACSHA256(key: $0) }
        shared.withUnsafeBytes { prkKeyMAC.update($0) }
        let prkKey = prkKeyMAC.finalize()
        var ikmMAC = prkKey.withUnsafeBytes { HMACSHA256(key: $0) }
        keyInfoLabel.withUnsafeBytes { ikmMAC.update($0) }
        uaPublic.withUnsafeBytes { ikmMAC.update($0) }
        asPublic.withUnsafeBytes { ikmMAC.update($0) }
        withUnsafeBytes(of: UInt8(1)) { ikmMAC.update($0) }
        let ikm = ikmMAC.finalize()
        // PRK = HKDF-Extract(salt, IKM); CEK and NONCE are its expansions to 16 and 12 bytes.
        var prkMAC = salt.withUnsafeBytes { HMACSHA256(key: $0) }
        ikm.withUnsafeBytes { prkMAC.update($0) }
        let prk = prkMAC.finalize()
        var cekMAC = prk.withUnsafeBytes { HMACSHA256(key: $0) }
        cekInfo.withUnsafeBytes { cekMAC.update($0) }
        let cek = cekMAC.finalize().withUnsafeBytes { SymmetricKey(data: $0[0..<16]) }
        var nonceMAC = prk.withUnsafeBytes { HMACSHA256(key: $0) }
        nonceInfo.withUnsafeBytes { nonceMAC.update($0) }
        let nonce = try nonceMAC.finalize().withUnsafeBytes { try AES.GCM.Nonce(data: $0[0..<12]) }
        return (cek, nonce)
    }

    /// HMAC-SHA-256 of one message, for the RFC 4231 vectors.
    static func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var mac = key.withUnsafeBytes { HMACSHA256(key: $0) }
        message.withUnsafeBytes { mac.update($0) }
        return Array(mac.finalize())
    }

    private static let keyInfoLabel = Array("WebPush: info\0".utf8)
    /// The infos with Expand's block counter (0x01) already appended.
    private static let cekInfo = Array("Content-Encoding: aes128gcm\0\u{1}".utf8)
    private static let nonceInfo = Array("Content-Encoding: nonce\0\u{1}".utf8)
}
