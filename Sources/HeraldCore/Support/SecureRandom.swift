package import FoundationEssentials
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Random bytes and UUIDs from the operating system's generator: one system call per use of `bytes`,
/// one per 32 UUIDs.
///
/// The obvious spellings cost more on Linux: Foundation's `UUID()` opens, reads and closes
/// `/dev/urandom` for every UUID (three system calls and a descriptor), `SystemRandomNumberGenerator`
/// makes one `getrandom` call per eight bytes, and `UInt8.random(using:)` one per byte (sixteen for
/// a Web Push salt). `arc4random_buf` (glibc 2.36 and later, Darwin) fills the whole buffer with one
/// `getrandom`.
package enum SecureRandom {
    /// `count` random bytes.
    package static func bytes(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// A random (version 4, RFC 9562 §5.4) UUID. Its bits come from the system's generator through
    /// `uuidBits`, 512 bytes at a time: a notify's request id and `apns-id` cost a copy each, not a
    /// system call. UUIDs here name requests and messages; they are not secrets.
    package static func uuid() -> UUID {
        var value = uuid_t(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { bytes in
            uuidBits.withLock { $0.take(into: bytes) }
            // 122 random bits: the version nibble is 0100 and the variant bits are 10.
            bytes[6] = (bytes[6] & 0x0F) | 0x40
            bytes[8] = (bytes[8] & 0x3F) | 0x80
        }
        return UUID(uuid: value)
    }

    /// Random bytes from the system's generator, drawn from in turn and refilled when used up.
    struct Pool {
        private var bytes = [UInt8](repeating: 0, count: 512)
        private var used = 512

        /// Fills `buffer` (at most 512 bytes) with bytes not handed out before.
        mutating func take(into buffer: UnsafeMutableRawBufferPointer) {
            if used + buffer.count > bytes.count {
                bytes.withUnsafeMutableBytes { SecureRandom.fill($0) }
                used = 0
            }
            bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[used..<used + buffer.count])) }
            used += buffer.count
        }
    }

    private static let uuidBits = Mutex(Pool())

    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Glibc) || canImport(Darwin)
            arc4random_buf(base, buffer.count)
        #else
            var generator = SystemRandomNumberGenerator()
            for offset in stride(from: 0, to: buffer.count, by: 8) {
                let length = min(8, buffer.count - offset)
                withUnsafeBytes(of: generator.next()) { word in
                    UnsafeMutableRawBufferPointer(start: base + offset, count: length)
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: word[0..<length]))
                }
            }
        #endif
    }
}
