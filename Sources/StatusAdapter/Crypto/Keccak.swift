/// Keccak-f[1600] and the two sponges Status uses: legacy Keccak-256 (padding 0x01, as Ethereum)
/// and SHAKE-256 (FIPS 202, padding 0x1F) with a 64-byte output.
package enum Keccak {
    static let roundConstants: [UInt64] = [
        0x0000_0000_0000_0001, 0x0000_0000_0000_8082, 0x8000_0000_0000_808A, 0x8000_0000_8000_8000, 0x0000_0000_0000_808B,
        0x0000_0000_8000_0001, 0x8000_0000_8000_8081, 0x8000_0000_0000_8009, 0x0000_0000_0000_008A, 0x0000_0000_0000_0088,
        0x0000_0000_8000_8009, 0x0000_0000_8000_000A, 0x0000_0000_8000_808B, 0x8000_0000_0000_008B, 0x8000_0000_0000_8089,
        0x8000_0000_0000_8003, 0x8000_0000_0000_8002, 0x8000_0000_0000_0080, 0x0000_0000_0000_800A, 0x8000_0000_8000_000A,
        0x8000_0000_8000_8081, 0x8000_0000_0000_8080, 0x0000_0000_8000_0001, 0x8000_0000_8000_8008,
    ]

    /// Legacy Keccak-256 (not FIPS SHA3-256): Ethereum's and status-go's `Keccak256`.
    package static func keccak256(_ data: some Sequence<UInt8>) -> [UInt8] {
        hash(data, suffix: 0x01, outputLength: 32)
    }

    /// SHAKE-256 with a 64-byte output: status-go's `Shake256` / `HashPublicKey`.
    package static func shake256(_ data: some Sequence<UInt8>, outputLength: Int = 64) -> [UInt8] {
        hash(data, suffix: 0x1F, outputLength: outputLength)
    }

    /// Both sponges have a rate of 136 bytes (a capacity of 512 bits).
    static let rate = 136

    /// The sponge over `data`'s bytes where they are contiguous (arrays, slices), over a copy
    /// otherwise.
    private static func hash(_ data: some Sequence<UInt8>, suffix: UInt8, outputLength: Int) -> [UInt8] {
        if let digest = data.withContiguousStorageIfAvailable({
            sponge(UnsafeRawBufferPointer($0), suffix: suffix, outputLength: outputLength)
        }) {
            return digest
        }
        return Array(data).withUnsafeBytes { sponge($0, suffix: suffix, outputLength: outputLength) }
    }

    /// Absorbs `input` a lane (8 bytes, little-endian) at a time, then squeezes `outputLength`
    /// bytes. The state lives on the stack: a hash allocates nothing but its output.
    static func sponge(_ input: UnsafeRawBufferPointer, suffix: UInt8, outputLength: Int) -> [UInt8] {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 25) { lanes -> [UInt8] in
            guard let state = lanes.baseAddress else { return [] }
            state.initialize(repeating: 0, count: 25)
            var offset = 0
            while input.count - offset >= rate {
                for lane in 0..<(rate / 8) {
                    state[lane] ^= UInt64(littleEndian: input.loadUnaligned(fromByteOffset: offset + 8 * lane, as: UInt64.self))
                }
                permute(state)
                offset += rate
            }
            // The last, partial block, padded: the suffix after the input, 0x80 in the block's last byte.
            let tail = input.count - offset
            for i in 0..<tail { xor(input[offset + i], at: i, into: state) }
            xor(suffix, at: tail, into: state)
            xor(0x80, at: rate - 1, into: state)
            permute(state)

            return [UInt8](unsafeUninitializedCapacity: outputLength) { output, initialized in
                var written = 0
                while true {
                    let count = min(rate, outputLength - written)
                    for i in 0..<count {
                        output[written + i] = UInt8(truncatingIfNeeded: state[i >> 3] >> (UInt64(i & 7) << 3))
                    }
                    written += count
                    if written == outputLength { break }
                    permute(state)
                }
                initialized = outputLength
            }
        }
    }

    @inline(__always)
    private static func xor(_ byte: UInt8, at index: Int, into state: UnsafeMutablePointer<UInt64>) {
        state[index >> 3] ^= UInt64(byte) << (UInt64(index & 7) << 3)
    }

    /// Keccak-f[1600] on the 25 lanes (index x + 5y), kept in locals for the 24 rounds.
    static func permute(_ s: UnsafeMutablePointer<UInt64>) {
        var a0 = s[0]
        var a1 = s[1]
        var a2 = s[2]
        var a3 = s[3]
        var a4 = s[4]
        var a5 = s[5]
        var a6 = s[6]
        var a7 = s[7]
        var a8 = s[8]
        var a9 = s[9]
        var a10 = s[10]
        var a11 = s[11]
        var a12 = s[12]
        var a13 = s[13]
        var a14 = s[14]
        var a15 = s[15]
        var a16 = s[16]
        var a17 = s[17]
        var a18 = s[18]
        var a19 = s[19]
        var a20 = s[20]
        var a21 = s[21]
        var a22 = s[22]
        var a23 = s[23]
        var a24 = s[24]
        for round in 0..<24 {
            // θ
            let c0 = a0 ^ a5 ^ a10 ^ a15 ^ a20
            let c1 = a1 ^ a6 ^ a11 ^ a16 ^ a21
            let c2 = a2 ^ a7 ^ a12 ^ a17 ^ a22
            let c3 = a3 ^ a8 ^ a13 ^ a18 ^ a23
            let c4 = a4 ^ a9 ^ a14 ^ a19 ^ a24
            let d0 = c4 ^ rotl(c1, 1)
            let d1 = c0 ^ rotl(c2, 1)
            let d2 = c1 ^ rotl(c3, 1)
            let d3 = c2 ^ rotl(c4, 1)
            let d4 = c3 ^ rotl(c0, 1)
            // ρ and π: lane (x, y) moves to (y, 2x + 3y), rotated.
            let b0 = (a0 ^ d0)
            let b1 = rotl((a6 ^ d1), 44)
            let b2 = rotl((a12 ^ d2), 43)
            let b3 = rotl((a18 ^ d3), 21)
            let b4 = rotl((a24 ^ d4), 14)
            let b5 = rotl((a3 ^ d3), 28)
            let b6 = rotl((a9 ^ d4), 20)
            let b7 = rotl((a10 ^ d0), 3)
            let b8 = rotl((a16 ^ d1), 45)
            let b9 = rotl((a22 ^ d2), 61)
            let b10 = rotl((a1 ^ d1), 1)
            let b11 = rotl((a7 ^ d2), 6)
            let b12 = rotl((a13 ^ d3), 25)
            let b13 = rotl((a19 ^ d4), 8)
            let b14 = rotl((a20 ^ d0), 18)
            let b15 = rotl((a4 ^ d4), 27)
            let b16 = rotl((a5 ^ d0), 36)
            let b17 = rotl((a11 ^ d1), 10)
            let b18 = rotl((a17 ^ d2), 15)
            let b19 = rotl((a23 ^ d3), 56)
            let b20 = rotl((a2 ^ d2), 62)
            let b21 = rotl((a8 ^ d3), 55)
            let b22 = rotl((a14 ^ d4), 39)
            let b23 = rotl((a15 ^ d0), 41)
            let b24 = rotl((a21 ^ d1), 2)
            // χ
            a0 = b0 ^ (~b1 & b2)
            a1 = b1 ^ (~b2 & b3)
            a2 = b2 ^ (~b3 & b4)
            a3 = b3 ^ (~b4 & b0)
            a4 = b4 ^ (~b0 & b1)
            a5 = b5 ^ (~b6 & b7)
            a6 = b6 ^ (~b7 & b8)
            a7 = b7 ^ (~b8 & b9)
            a8 = b8 ^ (~b9 & b5)
            a9 = b9 ^ (~b5 & b6)
            a10 = b10 ^ (~b11 & b12)
            a11 = b11 ^ (~b12 & b13)
            a12 = b12 ^ (~b13 & b14)
            a13 = b13 ^ (~b14 & b10)
            a14 = b14 ^ (~b10 & b11)
            a15 = b15 ^ (~b16 & b17)
            a16 = b16 ^ (~b17 & b18)
            a17 = b17 ^ (~b18 & b19)
            a18 = b18 ^ (~b19 & b15)
            a19 = b19 ^ (~b15 & b16)
            a20 = b20 ^ (~b21 & b22)
            a21 = b21 ^ (~b22 & b23)
            a22 = b22 ^ (~b23 & b24)
            a23 = b23 ^ (~b24 & b20)
            a24 = b24 ^ (~b20 & b21)
            // ι
            a0 ^= roundConstants[round]
        }
        s[0] = a0
        s[1] = a1
        s[2] = a2
        s[3] = a3
        s[4] = a4
        s[5] = a5
        s[6] = a6
        s[7] = a7
        s[8] = a8
        s[9] = a9
        s[10] = a10
        s[11] = a11
        s[12] = a12
        s[13] = a13
        s[14] = a14
        s[15] = a15
        s[16] = a16
        s[17] = a17
        s[18] = a18
        s[19] = a19
        s[20] = a20
        s[21] = a21
        s[22] = a22
        s[23] = a23
        s[24] = a24
    }

    @inline(__always)
    static func rotl(_ x: UInt64, _ n: UInt64) -> UInt64 { (x &<< n) | (x &>> (64 &- n)) }  // n in 1...63
}
