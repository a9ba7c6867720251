import Crypto

/// HMAC-SHA-256 (RFC 2104), `H((K ⊕ opad) || H((K ⊕ ipad) || m))`, fed its message in parts.
///
/// Two SHA-256 contexts, each given its padded key when the MAC is made; the message goes to the
/// inner one as it comes, and nothing is copied or joined. swift-crypto's `HMAC` wraps the key and
/// keeps the same two contexts, and cost Web Push's key derivation more than its ten hashes
/// (bench/run.sh's Web Push row, docs/operations.md). Each part is fed in place: no padded key
/// joined to the message in a new array, no array for the key or a digest.
struct HMACSHA256 {
    private var inner = SHA256()
    private var outer = SHA256()

    init(key: UnsafeRawBufferPointer) {
        if key.count > 64 {
            // A key longer than the 64-byte block is hashed first (RFC 2104 §2).
            var hashed = SHA256()
            hashed.update(bufferPointer: key)
            hashed.finalize().withUnsafeBytes { absorb(key: $0) }
        } else {
            absorb(key: key)
        }
    }

    private mutating func absorb(key: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { pad in
            pad.initialize(repeating: 0x36)
            for (i, byte) in key.enumerated() { pad[i] ^= byte }
            inner.update(bufferPointer: UnsafeRawBufferPointer(pad))
            for i in pad.indices { pad[i] ^= 0x36 ^ 0x5C }
            outer.update(bufferPointer: UnsafeRawBufferPointer(pad))
            // The padded key is key material: it does not stay on the stack.
            pad.update(repeating: 0)
        }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        inner.update(bufferPointer: bytes)
    }

    /// The MAC. Mutating, not consuming: the outer context is then updated in place, where a
    /// consumed value's context, reached from the digest's closure, was copied first.
    mutating func finalize() -> SHA256Digest {
        let innerDigest = inner.finalize()
        innerDigest.withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize()
    }
}
