/// The memory record's table (docs/operations.md, "Once"): each delivery a fixed 24-byte entry (its
/// 16-byte key, a time, its state and the low bits of its trace's serial) in a ring in the order
/// entries were made, found through an open-addressed index of 4-byte positions (linear probing,
/// at most 80 % full, backward-shift deletion: no tombstones). About 30 bytes a delivery, at most
/// `bytesPerEntry`; nothing of it is reference-counted, and the ring and index grow with use up to
/// `capacity` entries. Times are tenths of a second from the first time the table saw. Not
/// thread-safe: its owner holds it in a lock.
struct CompactRecordTable {
    /// An entry's state.
    enum Kind: UInt8 {
        case empty = 0
        case claimed, delivered, rejected, dropped
    }

    struct Entry: Equatable {
        var kind: Kind
        /// Claimed at (`.claimed`) or answered from until (the others), in tenths of a second.
        var time: Int32
        /// The low 24 bits of its trace's serial, if it has one.
        var trace: UInt32?
    }

    private struct Slot {
        var high: UInt64
        var low: UInt64
        var time: Int32
        /// The kind (low 7 bits), whether it is traced (bit 7), and the trace's serial (bits 8–31).
        var packed: UInt32

        var kind: Kind { Kind(rawValue: UInt8(packed & 0x7f)) ?? .empty }
        var entry: Entry { Entry(kind: kind, time: time, trace: packed & 0x80 != 0 ? packed >> 8 : nil) }
        func has(_ key: RepeatKey) -> Bool { high == key.high && low == key.low }
    }

    /// What an entry costs at most: its 24-byte slot and its share of an index up to 80 % full.
    static var bytesPerEntry: Int { 40 }

    /// The bytes of one ring slot (24: checked by `CompactRecordTableTests`).
    static var slotBytes: Int { MemoryLayout<Slot>.stride }

    /// The bytes the ring and the index hold now.
    var bytes: Int { ring.capacity * MemoryLayout<Slot>.stride + index.capacity * MemoryLayout<UInt32>.stride }

    /// Entries held at most (the ring's positions).
    let capacity: Int
    private var ring: [Slot] = []
    /// The ring's positions in use: [oldest, next), each `position % capacity` in `ring`.
    private var oldest: UInt64 = 0
    private var next: UInt64 = 0
    /// Ring index + 1 of each entry, 0 where free; a power of two long.
    private var index: [UInt32] = []
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(1, min(capacity, Int(UInt32.max - 1)))
    }

    // MARK: Reading

    func find(_ key: RepeatKey) -> Entry? {
        guard let (_, at) = locate(key) else { return nil }
        return ring[at].entry
    }

    /// The oldest entry, for its owner to decide whether it is due (`dropOldest`).
    var oldestEntry: Entry? {
        guard oldest < next else { return nil }
        return ring[ringIndex(oldest)].entry
    }

    // MARK: Writing

    /// Sets `key`'s entry: in its place if it has one, else as the newest, dropping the oldest when
    /// the ring is full.
    mutating func set(_ key: RepeatKey, _ entry: Entry) {
        if let (_, at) = locate(key) {
            ring[at].time = entry.time
            ring[at].packed = Self.pack(entry)
            return
        }
        if next - oldest == UInt64(capacity) { dropOldest() }
        if (count + 1) * 5 > index.count * 4 { grow() }
        let at = ringIndex(next)
        let slot = Slot(high: key.high, low: key.low, time: entry.time, packed: Self.pack(entry))
        if at == ring.count {
            // Grown by doubling, to `capacity` exactly.
            if ring.count == ring.capacity { ring.reserveCapacity(min(capacity, max(16, ring.count * 2))) }
            ring.append(slot)
        } else {
            ring[at] = slot
        }
        next += 1
        count += 1
        insert(at, hash: Self.hash(key))
    }

    /// Forgets `key`'s entry; its ring position stays until it is the oldest.
    mutating func remove(_ key: RepeatKey) {
        guard let (place, at) = locate(key) else { return }
        ring[at].packed = 0
        count -= 1
        delete(place)
    }

    /// Drops the oldest ring position, and its entry if it has one.
    mutating func dropOldest() {
        guard oldest < next else { return }
        let at = ringIndex(oldest)
        oldest += 1
        let slot = ring[at]
        guard slot.kind != .empty, let (place, _) = locate(RepeatKey(high: slot.high, low: slot.low)) else { return }
        ring[at].packed = 0
        count -= 1
        delete(place)
    }

    /// Drops removed entries at the front of the ring: the oldest is then a live entry.
    mutating func skipRemoved() {
        while oldest < next, ring[ringIndex(oldest)].kind == .empty { oldest += 1 }
    }

    // MARK: The index

    private func ringIndex(_ position: UInt64) -> Int { Int(position % UInt64(capacity)) }

    private static func hash(_ key: RepeatKey) -> Int { Int(truncatingIfNeeded: key.low ^ (key.high >> 7)) }

    private static func pack(_ entry: Entry) -> UInt32 {
        UInt32(entry.kind.rawValue) | (entry.trace.map { 0x80 | ($0 & 0xFF_FFFF) << 8 } ?? 0)
    }

    /// The index place and ring index of `key`'s entry.
    private func locate(_ key: RepeatKey) -> (place: Int, at: Int)? {
        guard !index.isEmpty else { return nil }
        let mask = index.count - 1
        var place = Self.hash(key) & mask
        while index[place] != 0 {
            let at = Int(index[place] - 1)
            if ring[at].has(key) { return (place, at) }
            place = (place + 1) & mask
        }
        return nil
    }

    private mutating func insert(_ at: Int, hash: Int) {
        let mask = index.count - 1
        var place = hash & mask
        while index[place] != 0 { place = (place + 1) & mask }
        index[place] = UInt32(at + 1)
    }

    /// Empties `place`, moving back each later entry of its run that may not be found past the hole.
    private mutating func delete(_ place: Int) {
        let mask = index.count - 1
        var hole = place
        var probe = (hole + 1) & mask
        while index[probe] != 0 {
            let slot = ring[Int(index[probe] - 1)]
            let home = Self.hash(RepeatKey(high: slot.high, low: slot.low)) & mask
            // The entry at `probe` may move into the hole when its home is not in (hole, probe].
            let movable = hole <= probe ? (home <= hole || home > probe) : (home <= hole && home > probe)
            if movable {
                index[hole] = index[probe]
                hole = probe
            }
            probe = (probe + 1) & mask
        }
        index[hole] = 0
    }

    /// Doubles the index (16 places at first) to hold one entry more at most 80 % full.
    private mutating func grow() {
        var size = max(16, index.count * 2)
        while size * 4 < (count + 1) * 5 { size *= 2 }
        index = [UInt32](repeating: 0, count: size)
        var position = oldest
        while position < next {
            let at = ringIndex(position)
            let slot = ring[at]
            if slot.kind != .empty { insert(at, hash: Self.hash(RepeatKey(high: slot.high, low: slot.low))) }
            position += 1
        }
    }
}
