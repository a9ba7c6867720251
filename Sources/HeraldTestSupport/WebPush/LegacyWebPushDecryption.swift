package import Crypto
import Foundation

/// What an iOS app's notification extension does with a relayed `aesgcm` message (the encoding of
/// the Web Push drafts that Mastodon still sends by default): ECDH with the sender key, two HKDF
/// steps with the auth secret and the salt, one AES-GCM record, then the 2-byte padding length.
package enum LegacyWebPushDecryption {
    package enum Failure: Error { case badKey, decryptionFailed, badPadding }

    package static func decrypt(
        _ body: [UInt8], senderKey: [UInt8], salt: [UInt8], receiver: P256.KeyAgreement.PrivateKey, authSecret: [UInt8]
    ) throws -> [UInt8] {
        guard let sender = try? P256.KeyAgreement.PublicKey(x963Representation: senderKey) else { throw Failure.badKey }
        let shared = try receiver.sharedSecretFromKeyAgreement(with: sender)
        let ikm = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: authSecret, sharedInfo: Array("Content-Encoding: auth\0".utf8), outputByteCount: 32)
        let receiverKey = [UInt8](receiver.publicKey.x963Representation)
        var context = Array("P-256\0".utf8)
        context += [0, UInt8(receiverKey.count)] + receiverKey + [0, UInt8(senderKey.count)] + senderKey
        let cek = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: aesgcm\0".utf8) + context, outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: nonce\0".utf8) + context, outputByteCount: 12)
        let nonceBytes = nonce.withUnsafeBytes { Array($0) }
        guard body.count >= 18,
            let box = try? AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonceBytes), ciphertext: body.dropLast(16), tag: body.suffix(16)),
            let opened = try? AES.GCM.open(box, using: cek)
        else { throw Failure.decryptionFailed }
        let plain = [UInt8](opened)
        guard plain.count >= 2 else { throw Failure.badPadding }
        let padding = Int(plain[0]) << 8 | Int(plain[1])
        guard plain.count >= 2 + padding else { throw Failure.badPadding }
        return Array(plain[(2 + padding)...])
    }
}
