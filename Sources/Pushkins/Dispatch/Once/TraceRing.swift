import DequeModule
import HeraldCore

/// The memory record's delivery traces (docs/operations.md, "Why didn't my phone ring?"): the most
/// recent deliveries, bounded in bytes (`notify.trace_max_bytes`), the oldest dropped first. Each
/// has a serial number, by which its delivery updates it in O(1); a question about one event reads
/// the ring from the newest, which is an operator's rare request, never a notify's.
struct TraceRing {
    struct Entry {
        var trace: TracedDelivery
        /// The full pushkey, which a question names (the trace shows it shortened).
        var pushkey: String
        var bytes: Int
    }

    /// What one entry costs besides its strings, about: the struct, the deque's slot, the dates.
    static let fixedBytes = 200

    private var entries = Deque<Entry>()
    /// The serial of `entries.first`.
    private var first: UInt64 = 0
    private var bytes = 0
    let maxBytes: Int

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    var count: Int { entries.count }

    /// Appends a delivery's trace; its serial, or nil when traces are off (`maxBytes` 0).
    mutating func append(_ trace: TracedDelivery, pushkey: String) -> UInt64? {
        guard maxBytes > 0 else { return nil }
        let size = Self.fixedBytes + trace.eventId.utf8.count + trace.appId.utf8.count + pushkey.utf8.count + Self.variableBytes(trace)
        entries.append(Entry(trace: trace, pushkey: pushkey, bytes: size))
        bytes += size
        let serial = first + UInt64(entries.count - 1)
        while bytes > maxBytes || entries.count > Self.maxEntries, let oldest = entries.popFirst() {
            bytes -= oldest.bytes
            first += 1
        }
        return serial
    }

    /// Entries held at most, whatever their bytes: a serial's low 24 bits name one unambiguously
    /// (the memory record keeps only those, `CompactRecordTable`).
    static var maxEntries: Int { (1 << 24) - 1 }

    /// Updates the trace whose serial's low 24 bits are `serial`, unless the ring dropped it already.
    mutating func update(_ serial: UInt32, _ change: (inout TracedDelivery) -> Void) {
        let offset = (UInt64(serial) &- first) & 0xFF_FFFF
        guard offset < UInt64(entries.count) else { return }
        let index = Int(offset)
        let before = Self.variableBytes(entries[index].trace)
        change(&entries[index].trace)
        let grown = Self.variableBytes(entries[index].trace) - before
        entries[index].bytes += grown
        bytes += grown
    }

    /// The bytes of the strings a delivery's end may change.
    private static func variableBytes(_ trace: TracedDelivery) -> Int {
        trace.pushkey.utf8.count + (trace.reason?.utf8.count ?? 0) + (trace.detail?.utf8.count ?? 0)
            + (trace.providerId?.utf8.count ?? 0)
    }

    /// The traces `query` asks for, oldest first.
    func matching(_ query: DeliveryQuery) -> [TracedDelivery] {
        var found: [TracedDelivery] = []
        for entry in entries.reversed() where entry.trace.eventId == query.eventId {
            if let pushkey = query.pushkey, entry.pushkey != pushkey { continue }
            if let app = query.appId, entry.trace.appId != app { continue }
            found.append(entry.trace)
        }
        return found.reversed()
    }
}
