import CSodium
import Crypto
import CryptoExtras
import Foundation
import HeraldCore
import Pushkins

/// An ADAMANT account's keys (docs/adamant.md, "Crypto"): Ed25519, made from a passphrase as the
/// ADAMANT clients do (BIP39 seed, SHA-256 of it as the Ed25519 seed), and its `U…` address.
package struct AdamantKeys: Sendable, Equatable {
    /// 32 bytes.
    package let publicKey: [UInt8]
    /// 64 bytes, NaCl's layout: the 32-byte seed, then the public key.
    package let privateKey: [UInt8]

    package enum Failure: Error, Equatable, CustomStringConvertible {
        case badPrivateKey
        case emptyPassphrase

        package var description: String {
            switch self {
            case .badPrivateKey: return "not the hex of a 32-byte seed or a 64-byte Ed25519 private key"
            case .emptyPassphrase: return "the passphrase is empty"
            }
        }
    }

    /// From a passphrase: PBKDF2-HMAC-SHA512 (2048 rounds, salt "mnemonic") of its NFKD form, then
    /// SHA-256 of that seed is the Ed25519 seed.
    package init(passphrase: String) throws {
        let normalized = passphrase.trimmingCharacters(in: .whitespacesAndNewlines).decomposedStringWithCompatibilityMapping
        guard !normalized.isEmpty else { throw Failure.emptyPassphrase }
        let seed = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array(normalized.utf8), salt: Array("mnemonic".utf8), using: .sha512, outputByteCount: 64, unsafeUncheckedRounds: 2048)
        try self.init(seed: Array(SHA256.hash(data: seed.withUnsafeBytes { Array($0) })))
    }

    /// From a 32-byte Ed25519 seed.
    package init(seed: [UInt8]) throws {
        guard seed.count == 32, AdamantSodium.ready else { throw Failure.badPrivateKey }
        var publicKey = [UInt8](repeating: 0, count: 32)
        var privateKey = [UInt8](repeating: 0, count: 64)
        guard crypto_sign_seed_keypair(&publicKey, &privateKey, seed) == 0 else { throw Failure.badPrivateKey }
        self.publicKey = publicKey
        self.privateKey = privateKey
    }

    /// From hex: a 64-byte private key (seed ‖ public key) or a 32-byte seed.
    package init(privateKeyHex: String) throws {
        guard let bytes = [UInt8](hexString: privateKeyHex.trimmingCharacters(in: .whitespacesAndNewlines)),
            bytes.count == 64 || bytes.count == 32
        else { throw Failure.badPrivateKey }
        try self.init(seed: Array(bytes.prefix(32)))
        if bytes.count == 64, Array(bytes.suffix(32)) != publicKey { throw Failure.badPrivateKey }
    }

    package var address: String { Self.address(publicKey: publicKey) }

    /// `U` and the decimal of the first 8 bytes of SHA-256(public key), read little-endian.
    package static func address(publicKey: [UInt8]) -> String {
        let digest = Array(SHA256.hash(data: publicKey))
        var value: UInt64 = 0
        for byte in digest.prefix(8).reversed() { value = value << 8 | UInt64(byte) }
        return "U\(value)"
    }

    /// `^U[0-9]{6,20}$`.
    package static func isAddress(_ text: String) -> Bool {
        text.first == "U" && (7...21).contains(text.count) && text.dropFirst().allSatisfy(\.isASCII)
            && text.dropFirst().allSatisfy(\.isNumber)
    }
}

/// libsodium, initialised once.
enum AdamantSodium {
    static let ready: Bool = sodium_init() >= 0
}

extension Array where Element == UInt8 {
    /// Bytes from hex (even length, no prefix); nil when it is not hex.
    init?(hexString text: String) {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self = bytes
    }
}
