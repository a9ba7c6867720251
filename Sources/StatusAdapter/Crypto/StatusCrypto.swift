import Crypto
import Foundation
import HeraldCore
import Pushkins

/// The derived values and the symmetric encryption of the Status push protocol (docs/status-protocol.md, "Crypto").
package enum StatusCrypto {
    /// `HashPublicKey`: SHAKE-256 (64 bytes) of the compressed key.
    package static func hashPublicKey(_ key: Secp256k1.PublicKey) -> [UInt8] { Keccak.shake256(key.compressed) }

    /// `MessageID`: Keccak-256 of the uncompressed signer key followed by the raw message bytes.
    package static func messageId(signer: Secp256k1.PublicKey, message: [UInt8]) -> [UInt8] {
        Keccak.keccak256(signer.uncompressed + message)
    }

    /// The grant material: compressed client key, compressed server key, the access token.
    package static func grantDigest(client: Secp256k1.PublicKey, server: Secp256k1.PublicKey, accessToken: String) -> [UInt8] {
        Keccak.keccak256(client.compressed + server.compressed + Array(accessToken.utf8))
    }

    package static func verifyGrant(_ grant: [UInt8], client: Secp256k1.PublicKey, server: Secp256k1.PublicKey, accessToken: String) -> Bool
    {
        guard
            let signer = try? Secp256k1.PublicKey.recover(
                signature: grant, digest: grantDigest(client: client, server: server, accessToken: accessToken))
        else { return false }
        return signer == client
    }

    package enum SealError: Error, Equatable {
        case tooShort
        case authenticationFailed
    }

    /// AES-256-GCM as `nonce(12) || ciphertext || tag(16)`, no AAD.
    package static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]? = nil) throws -> [UInt8] {
        let gcmNonce = try nonce.map { try AES.GCM.Nonce(data: $0) } ?? AES.GCM.Nonce()
        let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: gcmNonce)
        return Array(gcmNonce) + Array(box.ciphertext) + Array(box.tag)
    }

    package static func open(_ blob: [UInt8], key: [UInt8]) throws(SealError) -> [UInt8] {
        guard blob.count >= 12 else { throw .tooShort }
        guard blob.count >= 28, let nonce = try? AES.GCM.Nonce(data: blob[0..<12]),
            let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: blob[12..<(blob.count - 16)], tag: blob[(blob.count - 16)...]),
            let plain = try? AES.GCM.open(box, using: SymmetricKey(data: key))
        else { throw .authenticationFailed }
        return Array(plain)
    }
}

extension Array where Element == UInt8 {
    /// Lowercase hex.
    package var hex: String { Hex.encode(self) }

    /// Parses hex (an optional 0x prefix allowed); nil if it is not hex.
    package init?(hex text: String) {
        var s = Substring(text)
        if s.hasPrefix("0x") || s.hasPrefix("0X") { s = s.dropFirst(2) }
        guard s.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.count / 2)
        var index = s.startIndex
        while index < s.endIndex {
            let next = s.index(index, offsetBy: 2)
            guard let byte = UInt8(s[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self = bytes
    }
}
