import FoundationEssentials
import Testing

@testable import DeliveryRecord
@testable import HeraldCore
@testable import Pushkins

/// The memory record's trace ring (`TraceRing`): bounded by what its entries keep in memory (their
/// slots, with a growing deque's room, and their strings' heap storage), not by their characters.
@Suite struct TraceRingTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    func trace(_ i: Int, eventId: String? = nil) -> TracedDelivery {
        TracedDelivery(
            eventId: eventId ?? "$event-\(i)-0123456789abcdef", appId: "com.example.apns.app", pushkey: "shortened",
            state: .inFlight, startedAt: Self.start, instance: "herald-1")
    }

    func pushkey(_ i: Int) -> String { "k\(i)-" + String(repeating: "k", count: 40) }

    /// Appends delivery `i`'s trace as the record does when it claims it.
    func append(_ i: Int, eventId: String? = nil, to ring: inout TraceRing) -> UInt64? {
        let start = trace(i, eventId: eventId)
        return ring.append(
            TraceStart(eventId: start.eventId, appId: start.appId, pushkey: pushkey(i)), at: Self.start, instance: start.instance)
    }

    @Test func aStringCountsItsHeapObjectUnlessItIsSmall() {
        #expect(TraceCost.heapBytes(nil) == 0)
        #expect(TraceCost.heapBytes("") == 0)
        #expect(TraceCost.heapBytes(String(repeating: "a", count: 15)) == 0)  // held inline
        // 32-byte header + 16 bytes + NUL + malloc's 8, rounded up to 16.
        #expect(TraceCost.heapBytes(String(repeating: "a", count: 16)) == 64)
        #expect(TraceCost.heapBytes(String(repeating: "a", count: 44)) == 96)
        #expect(TraceCost.heapBytes(String(repeating: "a", count: 36)) == 80)
    }

    @Test func anEntryCountsItsSlotTwiceAndEveryLongStringOfItsOwn() {
        let slot = MemoryLayout<TraceRing.Entry>.stride
        var entry = TraceRing.Entry(trace(1, eventId: "$3957tyerfgewrf384"), pushkey: String(repeating: "A", count: 44))
        // Event id 18 bytes (64), app id 20 (64), pushkey 44 (96); the instance is the ring's, once.
        #expect(entry.bytes == 2 * slot + 64 + 64 + 96)
        entry.trace.providerId = "0E9E5A5A-6E5B-4B55-9D2C-8B9A5E1E1F0A"
        entry.trace.state = .delivered
        #expect(entry.bytes == 2 * slot + 64 + 64 + 96 + 80)
        // What the ring gives back is the trace, with the pushkey shortened as in the logs.
        #expect(entry.trace.pushkey == Redaction.pushkey(String(repeating: "A", count: 44)))
        #expect(entry.trace.state == .delivered)
    }

    @Test func theRingStaysWithinItsBytesAsEntriesGrowAndKeepsTheNewest() throws {
        var ring = TraceRing(maxBytes: 64 * 1024)
        var serials: [UInt64] = []
        for i in 0..<2_000 {
            let appended = append(i, to: &ring)
            let serial = try #require(appended)
            serials.append(serial)
            // Each delivery's end adds its longer strings; the ring drops its oldest to stay bounded.
            ring.update(UInt32(truncatingIfNeeded: serial) & 0xFF_FFFF) {
                $0.state = .failed
                $0.detail = String(repeating: "upstream said no; ", count: 4)
                $0.providerId = "0E9E5A5A-6E5B-4B55-9D2C-8B9A5E1E1F0A"
            }
            #expect(ring.bytes <= ring.maxBytes)
        }
        let perEntry = ring.bytes / ring.count
        #expect(ring.count == 64 * 1024 / perEntry || ring.count == 64 * 1024 / perEntry - 1)
        // The newest are kept, ended; the oldest are gone, and an update of a dropped one does nothing.
        let newest = ring.matching(DeliveryQuery(eventId: trace(1_999).eventId))
        #expect(newest.map(\.state) == [.failed])
        #expect(newest.first?.providerId == "0E9E5A5A-6E5B-4B55-9D2C-8B9A5E1E1F0A")
        #expect(ring.matching(DeliveryQuery(eventId: trace(0).eventId)).isEmpty)
        let before = ring.bytes
        ring.update(UInt32(truncatingIfNeeded: serials[0]) & 0xFF_FFFF) { $0.detail = String(repeating: "x", count: 500) }
        #expect(ring.bytes == before)
    }

    @Test func aQueryFindsAnEventsDeliveriesByPushkeyAndAppOldestFirst() {
        var ring = TraceRing(maxBytes: 1 << 20)
        _ = append(1, eventId: "$e", to: &ring)
        _ = append(2, eventId: "$other", to: &ring)
        _ = append(3, eventId: "$e", to: &ring)
        #expect(ring.matching(DeliveryQuery(eventId: "$e")).map(\.pushkey) == [pushkey(1), pushkey(3)].map(Redaction.pushkey))
        #expect(ring.matching(DeliveryQuery(eventId: "$e", pushkey: pushkey(3))).count == 1)
        #expect(ring.matching(DeliveryQuery(eventId: "$e", appId: "com.example.other")).isEmpty)
    }

    @Test func noBytesMeansNoTraces() {
        var ring = TraceRing(maxBytes: 0)
        #expect(append(1, to: &ring) == nil)
        #expect(ring.count == 0)
    }
}
