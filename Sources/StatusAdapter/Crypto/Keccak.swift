/// Keccak-f[1600] and the two sponges Status uses: legacy Keccak-256 (padding 0x01, as Ethereum)
/// and SHAKE-256 (FIPS 202, padding 0x1F) with a 64-byte output.
public enum Keccak {
    static let roundConstants: [UInt64] = [
        0x0000_0000_0000_0001, 0x0000_0000_0000_8082, 0x8000_0000_0000_808A, 0x8000_0000_8000_8000, 0x0000_0000_0000_808B,
        0x0000_0000_8000_0001, 0x8000_0000_8000_8081, 0x8000_0000_0000_8009, 0x0000_0000_0000_008A, 0x0000_0000_0000_0088,
        0x0000_0000_8000_8009, 0x0000_0000_8000_000A, 0x0000_0000_8000_808B, 0x8000_0000_0000_008B, 0x8000_0000_0000_8089,
        0x8000_0000_0000_8003, 0x8000_0000_0000_8002, 0x8000_0000_0000_0080, 0x0000_0000_0000_800A, 0x8000_0000_8000_000A,
        0x8000_0000_8000_8081, 0x8000_0000_0000_8080, 0x0000_0000_8000_0001, 0x8000_0000_8000_8008,
    ]

    /// Legacy Keccak-256 (not FIPS SHA3-256): Ethereum's and status-go's `Keccak256`.
    public static func keccak256(_ data: some Sequence<UInt8>) -> [UInt8] {
        sponge(Array(data), rate: 136, suffix: 0x01, outputLength: 32)
    }

    /// SHAKE-256 with a 64-byte output: status-go's `Shake256` / `HashPublicKey`.
    public static func shake256(_ data: some Sequence<UInt8>, outputLength: Int = 64) -> [UInt8] {
        sponge(Array(data), rate: 136, suffix: 0x1F, outputLength: outputLength)
    }

    /// Absorbs `input` a lane (8 bytes, little-endian) at a time, then squeezes `outputLength` bytes.
    static func sponge(_ input: [UInt8], rate: Int, suffix: UInt8, outputLength: Int) -> [UInt8] {
        var state = [UInt64](repeating: 0, count: 25)
        input.withUnsafeBytes { bytes in
            var offset = 0
            while bytes.count - offset >= rate {
                absorb(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + rate)]), into: &state)
                permute(&state)
                offset += rate
            }
            var last = [UInt8](repeating: 0, count: rate)
            let tail = bytes.count - offset
            last.withUnsafeMutableBytes { block in
                block.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                block[tail] ^= suffix
                block[rate - 1] ^= 0x80
                absorb(UnsafeRawBufferPointer(block), into: &state)
            }
            permute(&state)
        }

        var output = [UInt8](repeating: 0, count: outputLength)
        var written = 0
        while true {
            let count = min(rate, outputLength - written)
            output.withUnsafeMutableBufferPointer { out in
                for i in 0..<count {
                    out[written + i] = UInt8(truncatingIfNeeded: state[i >> 3] >> (UInt64(i & 7) << 3))
                }
            }
            written += count
            if written == outputLength { return output }
            permute(&state)
        }
    }

    private static func absorb(_ block: UnsafeRawBufferPointer, into state: inout [UInt64]) {
        for lane in 0..<(block.count / 8) {
            state[lane] ^= UInt64(littleEndian: block.loadUnaligned(fromByteOffset: 8 * lane, as: UInt64.self))
        }
    }

    static func permute(_ s: inout [UInt64]) {
        roundConstants.withUnsafeBufferPointer { constants in
            s.withUnsafeMutableBufferPointer { st in
                for round in 0..<24 {
                    // θ
                    let c0 = st[0] ^ st[5] ^ st[10] ^ st[15] ^ st[20]
                    let c1 = st[1] ^ st[6] ^ st[11] ^ st[16] ^ st[21]
                    let c2 = st[2] ^ st[7] ^ st[12] ^ st[17] ^ st[22]
                    let c3 = st[3] ^ st[8] ^ st[13] ^ st[18] ^ st[23]
                    let c4 = st[4] ^ st[9] ^ st[14] ^ st[19] ^ st[24]
                    let d0 = c4 ^ rotl(c1, 1), d1 = c0 ^ rotl(c2, 1), d2 = c1 ^ rotl(c3, 1), d3 = c2 ^ rotl(c4, 1), d4 = c3 ^ rotl(c0, 1)
                    for row in stride(from: 0, to: 25, by: 5) {
                        st[row] ^= d0
                        st[row + 1] ^= d1
                        st[row + 2] ^= d2
                        st[row + 3] ^= d3
                        st[row + 4] ^= d4
                    }
                    // ρ and π, unrolled: lane j takes the previous lane rotated by r, along π's cycle.
                    rhoPi(st)
                    // χ
                    for j in stride(from: 0, to: 25, by: 5) {
                        let a0 = st[j], a1 = st[j + 1], a2 = st[j + 2], a3 = st[j + 3], a4 = st[j + 4]
                        st[j] = a0 ^ (~a1 & a2)
                        st[j + 1] = a1 ^ (~a2 & a3)
                        st[j + 2] = a2 ^ (~a3 & a4)
                        st[j + 3] = a3 ^ (~a4 & a0)
                        st[j + 4] = a4 ^ (~a0 & a1)
                    }
                    // ι
                    st[0] ^= constants[round]
                }
            }
        }
    }

    @inline(__always)
    private static func rhoPi(_ st: UnsafeMutableBufferPointer<UInt64>) {
        var t = st[1]
        var saved: UInt64
        saved = st[10]
        st[10] = rotl(t, 1)
        t = saved
        saved = st[7]
        st[7] = rotl(t, 3)
        t = saved
        saved = st[11]
        st[11] = rotl(t, 6)
        t = saved
        saved = st[17]
        st[17] = rotl(t, 10)
        t = saved
        saved = st[18]
        st[18] = rotl(t, 15)
        t = saved
        saved = st[3]
        st[3] = rotl(t, 21)
        t = saved
        saved = st[5]
        st[5] = rotl(t, 28)
        t = saved
        saved = st[16]
        st[16] = rotl(t, 36)
        t = saved
        saved = st[8]
        st[8] = rotl(t, 45)
        t = saved
        saved = st[21]
        st[21] = rotl(t, 55)
        t = saved
        saved = st[24]
        st[24] = rotl(t, 2)
        t = saved
        saved = st[4]
        st[4] = rotl(t, 14)
        t = saved
        saved = st[15]
        st[15] = rotl(t, 27)
        t = saved
        saved = st[23]
        st[23] = rotl(t, 41)
        t = saved
        saved = st[19]
        st[19] = rotl(t, 56)
        t = saved
        saved = st[13]
        st[13] = rotl(t, 8)
        t = saved
        saved = st[12]
        st[12] = rotl(t, 25)
        t = saved
        saved = st[2]
        st[2] = rotl(t, 43)
        t = saved
        saved = st[20]
        st[20] = rotl(t, 62)
        t = saved
        saved = st[14]
        st[14] = rotl(t, 18)
        t = saved
        saved = st[22]
        st[22] = rotl(t, 39)
        t = saved
        saved = st[9]
        st[9] = rotl(t, 61)
        t = saved
        saved = st[6]
        st[6] = rotl(t, 20)
        t = saved
        saved = st[1]
        st[1] = rotl(t, 44)
        t = saved
    }

    @inline(__always)
    static func rotl(_ x: UInt64, _ n: UInt64) -> UInt64 { (x &<< n) | (x &>> (64 &- n)) }  // n in 1...63
}
