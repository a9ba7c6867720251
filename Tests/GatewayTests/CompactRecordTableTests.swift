import Testing

@testable import DeliveryRecord
@testable import Pushkins

/// The memory record's table (`CompactRecordTable`): a fixed-size entry per delivery, found by its
/// key, the oldest dropped first, and the same answers as a plain dictionary under any sequence
/// of writes, removals and drops.
@Suite struct CompactRecordTableTests {
    typealias Entry = CompactRecordTable.Entry

    func key(_ i: Int) -> RepeatKey { RepeatKey(["event \(i)", "app", "pushkey"]) }

    @Test func anEntryCostsAtMost40BytesWithItsIndex() {
        #expect(CompactRecordTable.slotBytes == 24)
        var table = CompactRecordTable(capacity: 100_000)
        for i in 0..<150_000 { table.set(key(i), Entry(kind: .delivered, time: Int32(i), trace: nil)) }
        #expect(table.count == 100_000)
        #expect(table.bytes <= 100_000 * CompactRecordTable.bytesPerEntry)
    }

    @Test func entriesAreFoundUpdatedInPlaceAndRemoved() {
        var table = CompactRecordTable(capacity: 10)
        table.set(key(1), Entry(kind: .claimed, time: 5, trace: 0xABCDEF))
        table.set(key(2), Entry(kind: .claimed, time: 6, trace: nil))
        #expect(table.find(key(1)) == Entry(kind: .claimed, time: 5, trace: 0xABCDEF))
        table.set(key(1), Entry(kind: .rejected, time: 600, trace: 0xABCDEF))
        #expect(table.find(key(1)) == Entry(kind: .rejected, time: 600, trace: 0xABCDEF))
        #expect(table.count == 2)
        #expect(table.oldestEntry?.time == 600)  // updated in its place: still the oldest
        table.remove(key(1))
        #expect(table.find(key(1)) == nil)
        #expect(table.find(key(2))?.time == 6)
        table.skipRemoved()
        #expect(table.oldestEntry?.time == 6)
        #expect(table.count == 1)
    }

    @Test func aFullRingDropsItsOldestEntryForTheNewest() {
        var table = CompactRecordTable(capacity: 3)
        for i in 0..<5 { table.set(key(i), Entry(kind: .delivered, time: Int32(i), trace: nil)) }
        #expect(table.count == 3)
        #expect((0..<5).map { table.find(key($0))?.time } == [nil, nil, 2, 3, 4])
    }

    /// A long random sequence of operations, checked against a dictionary that keeps the same
    /// order: every key's entry, the count and the oldest agree after each step.
    @Test(arguments: [1, 7, 42]) func theTableAgreesWithADictionaryUnderRandomOperations(seed: UInt64) {
        var random = SplitMix(seed: seed)
        let capacity = 64
        var table = CompactRecordTable(capacity: capacity)
        var model: [Int: Entry] = [:]
        var positions: [Int?] = []  // ring positions: the key written there, or nil once removed
        var oldest = 0
        for step in 0..<20_000 {
            let k = Int(random.next() % 200)
            switch random.next() % 4 {
            case 0, 1:
                let entry = Entry(kind: .claimed, time: Int32(step), trace: random.next() % 2 == 0 ? UInt32(step & 0xFFFFFF) : nil)
                if model[k] != nil {
                    model[k] = entry
                } else {
                    if positions.count - oldest == capacity {
                        if let gone = positions[oldest] { model[gone] = nil }
                        oldest += 1
                    }
                    model[k] = entry
                    positions.append(k)
                }
                table.set(key(k), entry)
            case 2:
                if model.removeValue(forKey: k) != nil, let at = positions.lastIndex(of: k) { positions[at] = nil }
                table.remove(key(k))
            default:
                if oldest < positions.count {
                    if let gone = positions[oldest] { model[gone] = nil }
                    oldest += 1
                }
                table.dropOldest()
            }
            #expect(table.count == model.count)
            if step % 97 == 0 {
                for probe in 0..<200 { #expect(table.find(key(probe)) == model[probe], "step \(step), key \(probe)") }
            }
        }
        for probe in 0..<200 { #expect(table.find(key(probe)) == model[probe]) }
    }
}

/// A small seeded generator, so that a failure repeats.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
