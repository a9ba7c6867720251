import DequeModule
package import Foundation
package import HeraldCore
import Synchronization

/// The record of one instance: in memory, bounded in entries and bytes, the oldest dropped first
/// and every entry forgotten once its window passed. A restart forgets it (docs/operations.md,
/// "Once"). Every operation is O(1): a table by key, and the keys in the order they were last
/// written, whose stale places (a key written again since) are skipped when they reach the front.
package final class MemoryDeliveryRecords: DeliveryRecords {
    private enum State {
        case claimed(at: Date)
        case recorded(RecordedOutcome, until: Date)
    }

    private struct Entry {
        var state: State
        /// The place of its latest write in `order`.
        var serial: UInt64
        /// Its delivery's place in `traces`.
        var traced: UInt64?
    }

    private struct Table {
        var entries: [RepeatKey: Entry] = [:]
        var order = Deque<(key: RepeatKey, serial: UInt64)>()
        var serial: UInt64 = 0
        var traces: TraceRing
    }

    /// What one entry costs, about: its key twice (table and order), its state and the tables'
    /// slots. The traces are bounded apart (`TraceRing`).
    package static let bytesPerEntry = 160

    private let table: Mutex<Table>
    let window: TimeInterval
    let takeover: TimeInterval
    package let maxEntries: Int

    /// `traceBytes`: the bound of the delivery traces kept beside the record (0: none).
    package init(window: Duration, takeover: Duration, maxEntries: Int, maxBytes: Int, traceBytes: Int = 0) {
        self.window = window.seconds
        self.takeover = takeover.seconds
        self.maxEntries = max(1, min(maxEntries, maxBytes / Self.bytesPerEntry))
        table = Mutex(Table(traces: TraceRing(maxBytes: traceBytes)))
    }

    package var health: ComponentHealth? { nil }

    package var count: Int { table.withLock { $0.entries.count } }

    package func claim(_ key: RepeatKey, trace: TraceStart? = nil, instance: String = InstanceName.current, now: Date) -> RecordClaim {
        table.withLock { table in
            let found: RecordClaim
            switch table.entries[key]?.state {
            case .recorded(let outcome, let until)? where until > now:
                return .recorded(outcome)
            case .claimed(let at)? where now.timeIntervalSince(at) < takeover:
                return .heldElsewhere
            case .claimed?: found = .takenOver
            default: found = .claimed
            }
            let traced = trace.flatMap { table.traces.append($0.inFlight(at: now, instance: instance), pushkey: $0.pushkey) }
            write(&table, key, .claimed(at: now), traced: traced, now: now)
            return found
        }
    }

    package func finish(_ key: RepeatKey, _ outcome: RecordedOutcome?, trace end: TraceEnd? = nil, now: Date) {
        table.withLock { table in
            let traced = table.entries[key]?.traced
            if let end, let traced { table.traces.update(traced) { end.applied(to: &$0, at: now) } }
            if let outcome {
                write(&table, key, .recorded(outcome, until: now.addingTimeInterval(window)), traced: traced, now: now)
            } else {
                table.entries.removeValue(forKey: key)
            }
        }
    }

    /// A heard delivery is forgotten by the record (a repeat of it is sent); its trace stays.
    package func heard(_ keys: [RepeatKey], now: Date) {
        table.withLock { table in
            for key in keys {
                guard case .recorded? = table.entries[key]?.state else { continue }
                table.entries.removeValue(forKey: key)
            }
        }
    }

    package func deliveries(_ query: DeliveryQuery, now: Date) -> [TracedDelivery] {
        table.withLock { $0.traces.matching(query) }
    }

    private func write(_ table: inout Table, _ key: RepeatKey, _ state: State, traced: UInt64?, now: Date) {
        table.serial &+= 1
        table.entries[key] = Entry(state: state, serial: table.serial, traced: traced)
        table.order.append((key, table.serial))
        trim(&table, now: now)
    }

    /// Drops from the front (the oldest writes): places whose key was written again since or
    /// removed, entries whose time passed, and the oldest beyond the bound.
    private func trim(_ table: inout Table, now: Date) {
        while let first = table.order.first {
            guard let entry = table.entries[first.key], entry.serial == first.serial else {
                table.order.removeFirst()
                continue
            }
            let expired: Bool
            switch entry.state {
            case .recorded(_, let until): expired = until <= now
            case .claimed(let at): expired = now.timeIntervalSince(at) >= max(takeover, window)
            }
            guard expired || table.entries.count > maxEntries else { break }
            table.entries.removeValue(forKey: first.key)
            table.order.removeFirst()
        }
        // Stale places of keys written again pile up only as fast as writes: bound them too.
        if table.order.count > 2 * maxEntries + 1024 {
            table.order = Deque(table.order.filter { table.entries[$0.key]?.serial == $0.serial })
        }
    }
}
