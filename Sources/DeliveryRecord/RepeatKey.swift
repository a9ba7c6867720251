import Crypto
import HeraldCore

/// What identifies one delivery across retries and instances (docs/operations.md, "Once"): a
/// digest of its parts, e.g. a Matrix notify's `(event_id, app_id, pushkey)`. Fixed-size (two
/// words, cheap to hash and compare), so a record costs the same whatever the ids' lengths, and
/// the ids themselves are never stored.
package struct RepeatKey: Hashable, Sendable, CustomStringConvertible {
    /// The first 16 bytes of SHA-256 over the length-prefixed parts.
    let high: UInt64
    let low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    package init(_ parts: [String]) {
        self.init(parts, last: nil)
    }

    /// The key of `parts` and then `last`, a part given as bytes (a pusher's `data` as JSON, hashed
    /// as written rather than made into a string first): the same digest as `last` given as text.
    package init(_ parts: [String], last: [UInt8]?) {
        var hasher = SHA256()
        func add(_ bytes: UnsafeRawBufferPointer) {
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(bufferPointer: bytes)
        }
        for part in parts {
            var part = part
            part.withUTF8 { add(UnsafeRawBufferPointer($0)) }
        }
        last?.withUnsafeBytes { add($0) }
        (high, low) = hasher.finalize().withUnsafeBytes { raw in
            (
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }

    /// The digest as 32 hex digits (the PostgreSQL record's key).
    package var digest: String {
        let bytes = withUnsafeBytes(of: high.bigEndian, Array.init) + withUnsafeBytes(of: low.bigEndian, Array.init)
        return Hex.encode(bytes)
    }

    package var description: String { digest }
}
