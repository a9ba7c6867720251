import Crypto
import Foundation

/// What identifies one delivery across retries and instances (docs/operations.md, "Once"): a
/// digest of its parts, e.g. a Matrix notify's `(event_id, app_id, pushkey)`. Fixed-size, so a
/// record costs the same whatever the ids' lengths, and the ids themselves are never stored.
package struct RepeatKey: Hashable, Sendable, CustomStringConvertible {
    /// The first 16 bytes of SHA-256 over the length-prefixed parts, as hex.
    package let digest: String

    package init(_ parts: [String]) {
        var hasher = SHA256()
        for part in parts {
            let bytes = Array(part.utf8)
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: bytes)
        }
        digest = hasher.finalize().prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    package init(digest: String) { self.digest = digest }

    package var description: String { digest }
}
