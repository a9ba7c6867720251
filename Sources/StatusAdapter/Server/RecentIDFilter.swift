/// Which ids may have been added lately: a Bloom filter in two generations, so that a lookup of an
/// id never added is answered without asking the store (docs/status-protocol.md, "Herald's
/// decisions").
///
/// `mayContain` is true for every id among the last `generation` added (and for the ones before
/// them until the older generation is dropped), and false for an id never added, except for about
/// one in a hundred. Each generation holds `generation` ids in about ten bits each; when the current
/// one is full it becomes the older one and the one before is forgotten.
struct RecentIDFilter: Sendable {
    private struct Bits: Sendable {
        var words: [UInt64]
        var count = 0

        init(bitCount: Int) { words = Array(repeating: 0, count: bitCount / 64) }

        func contains(_ indices: Indices) -> Bool {
            indices.allSatisfy { words[$0 >> 6] & (1 << UInt64($0 & 63)) != 0 }
        }

        mutating func insert(_ indices: Indices) {
            for index in indices { words[index >> 6] |= 1 << UInt64(index & 63) }
            count += 1
        }

        mutating func clear() {
            for i in words.indices { words[i] = 0 }
            count = 0
        }
    }

    /// The `hashes` bit positions of one id (double hashing of one 64-bit hash).
    struct Indices: Sequence, IteratorProtocol {
        var position: UInt32
        let step: UInt32
        let bitCount: UInt64
        var left = RecentIDFilter.hashes

        mutating func next() -> Int? {
            guard left > 0 else { return nil }
            left -= 1
            defer { position &+= step }
            // position × bitCount / 2³²: a position in 0..<bitCount without a division.
            return Int(truncatingIfNeeded: (UInt64(position) * bitCount) >> 32)
        }
    }

    /// Seven bit positions per id at about ten bits per id: about 0.7 % false positives per generation.
    static let hashes = 7

    let generation: Int
    private var current: Bits
    private var older: Bits

    /// A filter for `generation` ids per generation (at least 1 024).
    init(generation: Int) {
        self.generation = max(1024, generation)
        let bits = (self.generation * 10 + 63) / 64 * 64
        current = Bits(bitCount: bits)
        older = Bits(bitCount: bits)
    }

    /// The one hash of an id that its bit positions come from (the process's seeded `Hasher`).
    @Sendable static func digest(_ id: UnsafeRawBufferPointer) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(bytes: id)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    static func digest(_ id: [UInt8]) -> UInt64 { id.withUnsafeBytes(digest) }

    private func indices(_ hash: UInt64) -> Indices {
        Indices(
            position: UInt32(truncatingIfNeeded: hash), step: UInt32(truncatingIfNeeded: hash >> 32) | 1,
            bitCount: UInt64(current.words.count * 64))
    }

    func mayContain(_ id: [UInt8]) -> Bool {
        let positions = indices(Self.digest(id))
        return current.contains(positions) || older.contains(positions)
    }

    mutating func insert(_ id: [UInt8]) { insert(digest: Self.digest(id)) }

    /// Adds the id whose `digest` this is.
    mutating func insert(digest: UInt64) {
        if current.count >= generation {
            swap(&current, &older)
            current.clear()
        }
        current.insert(indices(digest))
    }
}
