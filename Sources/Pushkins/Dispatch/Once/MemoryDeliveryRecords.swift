import Foundation
import HeraldCore
import OrderedCollections
import Synchronization

/// The record of one instance: in memory, bounded in entries and bytes, the oldest dropped first
/// and every entry forgotten once its window passed. A restart forgets it (docs/operations.md,
/// "Once").
package final class MemoryDeliveryRecords: DeliveryRecords {
    private enum State {
        case claimed(at: Date)
        case recorded(RecordedOutcome, until: Date)
    }

    /// What one entry costs, about: its 32-character key, its state and the ordered table's slots.
    package static let bytesPerEntry = 160

    private let entries = Mutex(OrderedDictionary<RepeatKey, State>())
    let window: TimeInterval
    let takeover: TimeInterval
    package let maxEntries: Int

    package init(window: Duration, takeover: Duration, maxEntries: Int, maxBytes: Int) {
        self.window = window.seconds
        self.takeover = takeover.seconds
        self.maxEntries = max(1, min(maxEntries, maxBytes / Self.bytesPerEntry))
    }

    package var health: ComponentHealth? { nil }

    package var count: Int { entries.withLock { $0.count } }

    package func claim(_ key: RepeatKey, now: Date) -> RecordClaim {
        entries.withLock { table in
            switch table[key] {
            case .recorded(let outcome, let until)? where until > now:
                return .recorded(outcome)
            case .claimed(let at)? where now.timeIntervalSince(at) < takeover:
                return .heldElsewhere
            default:
                table.removeValue(forKey: key)
                table[key] = .claimed(at: now)
                trim(&table, now: now)
                return .claimed
            }
        }
    }

    package func finish(_ key: RepeatKey, _ outcome: RecordedOutcome?, now: Date) {
        entries.withLock { table in
            table.removeValue(forKey: key)
            if let outcome {
                table[key] = .recorded(outcome, until: now.addingTimeInterval(window))
                trim(&table, now: now)
            }
        }
    }

    /// Drops expired entries from the front (the oldest), then the oldest beyond the bound.
    private func trim(_ table: inout OrderedDictionary<RepeatKey, State>, now: Date) {
        while let first = table.elements.first {
            let expired: Bool
            switch first.value {
            case .recorded(_, let until): expired = until <= now
            case .claimed(let at): expired = now.timeIntervalSince(at) >= max(takeover, window)
            }
            guard expired || table.count > maxEntries else { break }
            table.removeFirst()
        }
    }
}
