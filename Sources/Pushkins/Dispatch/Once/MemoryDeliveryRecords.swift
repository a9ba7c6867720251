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
    }

    private struct Table {
        var entries: [RepeatKey: Entry] = [:]
        var order = Deque<(key: RepeatKey, serial: UInt64)>()
        var serial: UInt64 = 0
    }

    /// What one entry costs, about: its 32-character key twice (table and order), its state and
    /// the tables' slots.
    package static let bytesPerEntry = 160

    private let table = Mutex(Table())
    let window: TimeInterval
    let takeover: TimeInterval
    package let maxEntries: Int

    package init(window: Duration, takeover: Duration, maxEntries: Int, maxBytes: Int) {
        self.window = window.seconds
        self.takeover = takeover.seconds
        self.maxEntries = max(1, min(maxEntries, maxBytes / Self.bytesPerEntry))
    }

    package var health: ComponentHealth? { nil }

    package var count: Int { table.withLock { $0.entries.count } }

    package func claim(_ key: RepeatKey, now: Date) -> RecordClaim {
        table.withLock { table in
            switch table.entries[key]?.state {
            case .recorded(let outcome, let until)? where until > now:
                return .recorded(outcome)
            case .claimed(let at)? where now.timeIntervalSince(at) < takeover:
                return .heldElsewhere
            case .claimed?:
                write(&table, key, .claimed(at: now), now: now)
                return .takenOver
            default:
                write(&table, key, .claimed(at: now), now: now)
                return .claimed
            }
        }
    }

    package func finish(_ key: RepeatKey, _ outcome: RecordedOutcome?, now: Date) {
        table.withLock { table in
            if let outcome {
                write(&table, key, .recorded(outcome, until: now.addingTimeInterval(window)), now: now)
            } else {
                table.entries.removeValue(forKey: key)
            }
        }
    }

    private func write(_ table: inout Table, _ key: RepeatKey, _ state: State, now: Date) {
        table.serial &+= 1
        table.entries[key] = Entry(state: state, serial: table.serial)
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
