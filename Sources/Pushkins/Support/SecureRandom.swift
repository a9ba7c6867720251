import Foundation

/// Random bytes and UUIDs from the operating system's generator (`getrandom` on Linux), eight bytes
/// per call.
///
/// The obvious spellings cost more on Linux: Foundation's `UUID()` opens, reads and closes
/// `/dev/urandom` for every UUID (three system calls and a descriptor), and `UInt8.random(using:)`
/// makes one `getrandom` call per byte, sixteen for a Web Push salt.
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var offset = 0
            while offset < count {
                let word = generator.next()
                withUnsafeBytes(of: word) { wordBytes in
                    for byte in wordBytes where offset < count {
                        buffer[offset] = byte
                        offset += 1
                    }
                }
            }
            initialized = count
        }
    }

    /// A random (version 4, RFC 9562 §5.4) UUID.
    public static func uuid() -> UUID {
        var generator = SystemRandomNumberGenerator()
        // 122 random bits: the version nibble is 0100 and the variant bits are 10.
        let high = (generator.next() & ~0xF000) | 0x4000
        let low = (generator.next() & ~(0xC000 << 48)) | (0x8000 << 48)
        var value = uuid_t(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { bytes in
            bytes.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        return UUID(uuid: value)
    }
}
