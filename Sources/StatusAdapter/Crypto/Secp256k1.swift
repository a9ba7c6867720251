import CSecp256k1
import Foundation
import HeraldCore
import Pushkins

/// secp256k1 through libsecp256k1, as status-go (go-ethereum) uses it: recoverable signatures
/// R||S||V with V ∈ {0,1}, recovery, compressed and uncompressed keys, and ECDH whose shared key
/// is the raw X coordinate (docs/status-protocol.md, "Crypto"), not libsecp256k1's default SHA-256 of the point.
package enum Secp256k1 {
    package enum Error: Swift.Error, Equatable {
        case invalidPrivateKey
        case invalidPublicKey
        case invalidSignature
        case invalidDigest
    }

    /// One context for the process: after creation it is only read, which libsecp256k1 allows
    /// from several threads at once.
    nonisolated(unsafe) static let context: OpaquePointer = {
        guard let ctx = secp256k1_context_create(UInt32(SECP256K1_CONTEXT_NONE)) else { fatalError("secp256k1_context_create failed") }
        return ctx
    }()

    package struct PrivateKey: Sendable, Equatable {
        package let rawRepresentation: [UInt8]

        package init(rawRepresentation raw: [UInt8]) throws(Error) {
            guard raw.count == 32, secp256k1_ec_seckey_verify(Secp256k1.context, raw) == 1 else { throw .invalidPrivateKey }
            rawRepresentation = raw
        }

        /// A new random key.
        package init() {
            while true {
                let candidate = SecureRandom.bytes(32)
                if let key = try? PrivateKey(rawRepresentation: candidate) {
                    self = key
                    return
                }
            }
        }

        package var publicKey: PublicKey {
            var pubkey = secp256k1_pubkey()
            _ = secp256k1_ec_pubkey_create(Secp256k1.context, &pubkey, rawRepresentation)
            return PublicKey(pubkey)
        }

        /// A deterministic (RFC 6979), low-S recoverable signature of a 32-byte digest: R||S||V.
        package func signature(forDigest digest: [UInt8]) throws(Error) -> [UInt8] {
            guard digest.count == 32 else { throw .invalidDigest }
            var signature = secp256k1_ecdsa_recoverable_signature()
            guard secp256k1_ecdsa_sign_recoverable(Secp256k1.context, &signature, digest, rawRepresentation, nil, nil) == 1 else {
                throw .invalidPrivateKey
            }
            var output = [UInt8](repeating: 0, count: 64)
            var recid: Int32 = 0
            _ = secp256k1_ecdsa_recoverable_signature_serialize_compact(Secp256k1.context, &output, &recid, &signature)
            return output + [UInt8(recid)]
        }

        /// ECDH with `other`: the raw 32-byte X coordinate of other × self.
        package func sharedX(with other: PublicKey) throws(Error) -> [UInt8] {
            var point = other.point
            var output = [UInt8](repeating: 0, count: 32)
            let copyX: secp256k1_ecdh_hash_function = { output, x32, _, _ in
                guard let output, let x32 else { return 0 }
                output.update(from: x32, count: 32)
                return 1
            }
            guard secp256k1_ecdh(Secp256k1.context, &output, &point, rawRepresentation, copyX, nil) == 1 else { throw .invalidPublicKey }
            return output
        }
    }

    package struct PublicKey: Sendable, Equatable, Hashable {
        /// The 65-byte uncompressed form, 0x04||X||Y.
        package let uncompressed: [UInt8]

        init(_ pubkey: secp256k1_pubkey) {
            var pubkey = pubkey
            var output = [UInt8](repeating: 0, count: 65)
            var length = 65
            _ = secp256k1_ec_pubkey_serialize(Secp256k1.context, &output, &length, &pubkey, UInt32(SECP256K1_EC_UNCOMPRESSED))
            uncompressed = output
        }

        /// Parses a 33-byte compressed or 65-byte uncompressed key.
        package init(bytes: [UInt8]) throws(Error) {
            var pubkey = secp256k1_pubkey()
            guard bytes.count == 33 || bytes.count == 65,
                secp256k1_ec_pubkey_parse(Secp256k1.context, &pubkey, bytes, bytes.count) == 1
            else { throw .invalidPublicKey }
            self.init(pubkey)
        }

        /// The 33-byte compressed form, 0x02/0x03||X.
        package var compressed: [UInt8] {
            var point = self.point
            var output = [UInt8](repeating: 0, count: 33)
            var length = 33
            _ = secp256k1_ec_pubkey_serialize(Secp256k1.context, &output, &length, &point, UInt32(SECP256K1_EC_COMPRESSED))
            return output
        }

        var point: secp256k1_pubkey {
            var pubkey = secp256k1_pubkey()
            _ = secp256k1_ec_pubkey_parse(Secp256k1.context, &pubkey, uncompressed, 65)
            return pubkey
        }

        /// The signer of a 65-byte R||S||V signature over a 32-byte digest (go-ethereum's `SigToPub`).
        package static func recover(signature: [UInt8], digest: [UInt8]) throws(Error) -> PublicKey {
            guard digest.count == 32 else { throw .invalidDigest }
            guard signature.count == 65, signature[64] < 4 else { throw .invalidSignature }
            var parsed = secp256k1_ecdsa_recoverable_signature()
            guard
                secp256k1_ecdsa_recoverable_signature_parse_compact(
                    Secp256k1.context, &parsed, Array(signature[0..<64]), Int32(signature[64]))
                    == 1
            else { throw .invalidSignature }
            var pubkey = secp256k1_pubkey()
            guard secp256k1_ecdsa_recover(Secp256k1.context, &pubkey, &parsed, digest) == 1 else { throw .invalidSignature }
            return PublicKey(pubkey)
        }
    }
}
