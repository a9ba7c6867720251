import DequeModule
import FoundationEssentials
import HeraldCore

/// The memory record's delivery traces (docs/operations.md, "Why didn't my phone ring?"): the most
/// recent deliveries, bounded in bytes (`notify.trace_max_bytes`), the oldest dropped first. Each
/// has a serial number, by which its delivery updates it in O(1); a question about one event reads
/// the ring from the newest, which is an operator's rare request, never a notify's.
///
/// The bound counts what an entry keeps in memory (`TraceCost`): its slot, twice over for the
/// room a growing deque keeps, and the heap storage of each string it holds, so that 8 MiB of
/// traces is 8 MiB of the process's memory, not of the strings' characters.
struct TraceRing {
    /// One delivery as the ring keeps it: the notify's strings (shared, never copied), the shortened
    /// pushkey made when it is read.
    struct Entry {
        var eventId: String
        /// A front end's label: a literal, which costs the heap nothing.
        var frontEnd: String
        var appId: String
        /// The full pushkey, which a question names (the trace shows it shortened).
        var pushkey: String
        var instance: String
        var reason: String?
        var detail: String?
        var providerId: String?
        var target: String?
        var startedAt: Date
        var finishedAt: Date?
        var attempts: Int32
        var state: TracedDelivery.State

        /// A delivery claimed at `at` by `instance`, under way.
        init(_ start: TraceStart, at: Date, instance: String) {
            eventId = start.eventId
            frontEnd = start.frontEnd
            appId = start.appId
            pushkey = start.pushkey
            self.instance = instance
            startedAt = at
            attempts = 0
            state = .inFlight
        }

        init(_ trace: TracedDelivery, pushkey: String) {
            eventId = trace.eventId
            frontEnd = trace.frontEnd
            appId = trace.appId
            self.pushkey = pushkey
            instance = trace.instance
            reason = trace.reason
            detail = trace.detail
            providerId = trace.providerId
            target = trace.target
            startedAt = trace.startedAt
            finishedAt = trace.finishedAt
            attempts = Int32(clamping: trace.attempts)
            state = trace.state
        }

        var trace: TracedDelivery {
            get {
                TracedDelivery(
                    eventId: eventId, frontEnd: frontEnd, appId: appId, pushkey: Redaction.pushkey(pushkey), state: state, reason: reason,
                    detail: detail, startedAt: startedAt, finishedAt: finishedAt, attempts: Int(attempts),
                    instance: instance, providerId: providerId, target: target)
            }
            set { self = Entry(newValue, pushkey: pushkey) }
        }

        /// What the entry keeps in memory: its slot twice (a deque grows by doubling, so up to half
        /// its slots stand empty) and every string's heap storage. The ring's one instance name is
        /// shared by all its entries, and counted once.
        var bytes: Int {
            2 * MemoryLayout<Entry>.stride + TraceCost.heapBytes(eventId) + TraceCost.heapBytes(frontEnd)
                + TraceCost.heapBytes(appId)
                + TraceCost.heapBytes(pushkey) + TraceCost.heapBytes(reason) + TraceCost.heapBytes(detail)
                + TraceCost.heapBytes(providerId) + TraceCost.heapBytes(target)
        }
    }

    private var entries = Deque<Entry>()
    /// The serial of `entries.first`.
    private var first: UInt64 = 0
    private(set) var bytes = 0
    let maxBytes: Int

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    var count: Int { entries.count }

    /// Appends the trace of a delivery claimed at `at` by `instance`; its serial, or nil when
    /// traces are off (`maxBytes` 0).
    mutating func append(_ start: TraceStart, at: Date, instance: String) -> UInt64? {
        guard maxBytes > 0 else { return nil }
        let entry = Entry(start, at: at, instance: instance)
        bytes += entry.bytes
        entries.append(entry)
        let serial = first + UInt64(entries.count - 1)
        dropOldest()
        return serial
    }

    /// Appends the trace of a delivery that was not claimed (a front end whose repeats are kept
    /// apart, `DeliveryRecords.trace`): started at `startedAt`, ended by `end` at `at`.
    mutating func append(_ start: TraceStart, _ end: TraceEnd, startedAt: Date, at: Date, instance: String) {
        guard let serial = append(start, at: startedAt, instance: instance) else { return }
        update(UInt32(truncatingIfNeeded: serial) & 0xFF_FFFF) { end.applied(to: &$0, at: at) }
    }

    /// Drops the oldest entries until the ring is within its bounds.
    private mutating func dropOldest() {
        while bytes > maxBytes || entries.count > Self.maxEntries, let oldest = entries.popFirst() {
            bytes -= oldest.bytes
            first += 1
        }
    }

    /// Entries held at most, whatever their bytes: a serial's low 24 bits name one unambiguously
    /// (the memory record keeps only those, `CompactRecordTable`).
    static var maxEntries: Int { (1 << 24) - 1 }

    /// Updates the trace whose serial's low 24 bits are `serial`, unless the ring dropped it already.
    mutating func update(_ serial: UInt32, _ change: (inout TracedDelivery) -> Void) {
        let offset = (UInt64(serial) &- first) & 0xFF_FFFF
        guard offset < UInt64(entries.count) else { return }
        let index = Int(offset)
        let before = entries[index].bytes
        change(&entries[index].trace)
        bytes += entries[index].bytes - before
        dropOldest()
    }

    /// The most deliveries one question is answered with (the newest), as from PostgreSQL.
    static var maxAnswered: Int { 1000 }

    /// The traces `query` asks for, the newest `maxAnswered`, oldest first by when they started
    /// (as from PostgreSQL): an unclaimed delivery's trace joins the ring when it ends, so the
    /// ring's order is not always the order the deliveries started in.
    func matching(_ query: DeliveryQuery) -> [TracedDelivery] {
        var found: [TracedDelivery] = []
        for entry in entries.reversed()
        where query.matches(eventId: entry.eventId, pushkey: entry.pushkey, appId: entry.appId) {
            found.append(entry.trace)
            if found.count == Self.maxAnswered { break }
        }
        return found.reversed().enumerated().sorted { ($0.element.startedAt, $0.offset) < ($1.element.startedAt, $1.offset) }
            .map(\.element)
    }
}

/// What a string costs the heap, as the trace ring counts it.
enum TraceCost {
    /// A string of at most 15 UTF-8 bytes lives inside its own 16 bytes; a longer one has a heap
    /// object: a 32-byte header, its bytes and a terminating zero, in a malloc chunk (8 bytes of
    /// its own, rounded up to 16).
    static func heapBytes(_ string: String?) -> Int {
        guard let count = string?.utf8.count, count > 15 else { return 0 }
        return (32 + count + 1 + 8 + 15) / 16 * 16
    }
}
