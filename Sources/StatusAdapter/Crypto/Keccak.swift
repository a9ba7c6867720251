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
    static let rotations: [UInt64] = [1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 2, 14, 27, 41, 56, 8, 25, 43, 62, 18, 39, 61, 20, 44]
    static let piLanes: [Int] = [10, 7, 11, 17, 18, 3, 5, 16, 8, 21, 24, 4, 15, 23, 19, 13, 12, 2, 20, 14, 22, 9, 6, 1]

    /// Legacy Keccak-256 (not FIPS SHA3-256): Ethereum's and status-go's `Keccak256`.
    public static func keccak256(_ data: some Sequence<UInt8>) -> [UInt8] {
        sponge(Array(data), rate: 136, suffix: 0x01, outputLength: 32)
    }

    /// SHAKE-256 with a 64-byte output: status-go's `Shake256` / `HashPublicKey`.
    public static func shake256(_ data: some Sequence<UInt8>, outputLength: Int = 64) -> [UInt8] {
        sponge(Array(data), rate: 136, suffix: 0x1F, outputLength: outputLength)
    }

    static func sponge(_ input: [UInt8], rate: Int, suffix: UInt8, outputLength: Int) -> [UInt8] {
        var state = [UInt64](repeating: 0, count: 25)
        var offset = 0
        while input.count - offset >= rate {
            absorb(input[offset..<(offset + rate)], into: &state)
            permute(&state)
            offset += rate
        }
        var last = [UInt8](repeating: 0, count: rate)
        let tail = input.count - offset
        for i in 0..<tail { last[i] = input[offset + i] }
        last[tail] ^= suffix
        last[rate - 1] ^= 0x80
        absorb(last[...], into: &state)
        permute(&state)

        var output: [UInt8] = []
        output.reserveCapacity(outputLength)
        while true {
            for lane in 0..<(rate / 8) {
                var value = state[lane]
                for _ in 0..<8 {
                    output.append(UInt8(truncatingIfNeeded: value))
                    value >>= 8
                    if output.count == outputLength { return output }
                }
            }
            permute(&state)
        }
    }

    private static func absorb(_ block: ArraySlice<UInt8>, into state: inout [UInt64]) {
        var index = block.startIndex
        for lane in 0..<(block.count / 8) {
            var value: UInt64 = 0
            for byte in 0..<8 { value |= UInt64(block[index + byte]) << (8 * UInt64(byte)) }
            state[lane] ^= value
            index += 8
        }
    }

    static func permute(_ s: inout [UInt64]) {
        s.withUnsafeMutableBufferPointer { st in
            var bc = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            for round in 0..<24 {
                // θ
                bc.0 = st[0] ^ st[5] ^ st[10] ^ st[15] ^ st[20]
                bc.1 = st[1] ^ st[6] ^ st[11] ^ st[16] ^ st[21]
                bc.2 = st[2] ^ st[7] ^ st[12] ^ st[17] ^ st[22]
                bc.3 = st[3] ^ st[8] ^ st[13] ^ st[18] ^ st[23]
                bc.4 = st[4] ^ st[9] ^ st[14] ^ st[19] ^ st[24]
                let d = (
                    bc.4 ^ rotl(bc.1, 1), bc.0 ^ rotl(bc.2, 1), bc.1 ^ rotl(bc.3, 1), bc.2 ^ rotl(bc.4, 1), bc.3 ^ rotl(bc.0, 1)
                )
                for row in stride(from: 0, to: 25, by: 5) {
                    st[row] ^= d.0
                    st[row + 1] ^= d.1
                    st[row + 2] ^= d.2
                    st[row + 3] ^= d.3
                    st[row + 4] ^= d.4
                }
                // ρ and π
                var t = st[1]
                for i in 0..<24 {
                    let j = piLanes[i]
                    let saved = st[j]
                    st[j] = rotl(t, rotations[i])
                    t = saved
                }
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
                st[0] ^= roundConstants[round]
            }
        }
    }

    @inline(__always)
    static func rotl(_ x: UInt64, _ n: UInt64) -> UInt64 { (x &<< n) | (x &>> (64 &- n)) }  // n in 1...63
}
