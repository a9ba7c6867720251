package import FoundationEssentials
package import HeraldCore
import Synchronization

/// The record of one instance: in memory, bounded in entries and bytes, the oldest dropped first
/// and every entry forgotten once its window passed. A restart forgets it (docs/operations.md,
/// "Once"). Each delivery is a fixed-size entry of `CompactRecordTable` (its key's digest, a time
/// and its state: at most `bytesPerEntry`); its trace, when traces are kept, lives apart in a
/// `TraceRing` bounded in bytes of its own. Every operation is O(1).
package final class MemoryDeliveryRecords: DeliveryRecords {
    private struct State {
        var table: CompactRecordTable
        var traces: TraceRing
        /// The table's times are tenths of a second from this one, the first it saw.
        var base: Date?

        mutating func tenths(_ date: Date) -> Int32 {
            let base = self.base ?? date
            self.base = base
            return Int32(clamping: Int64((date.timeIntervalSince(base) * 10).rounded(.down)))
        }
    }

    /// What one entry costs at most (`CompactRecordTable`). The traces are bounded apart (`TraceRing`).
    package static var bytesPerEntry: Int { CompactRecordTable.bytesPerEntry }

    private let state: Mutex<State>
    /// The window and the takeover bound, in the table's tenths of a second.
    private let window: Int32
    private let takeover: Int32
    private let windowSeconds: TimeInterval
    package let maxEntries: Int

    /// `traceBytes`: the bound of the delivery traces kept beside the record (0: none).
    package init(window: Duration, takeover: Duration, maxEntries: Int, maxBytes: Int, traceBytes: Int = 0) {
        windowSeconds = window.seconds
        self.window = Int32(clamping: Int64((window.seconds * 10).rounded(.up)))
        self.takeover = Int32(clamping: Int64((takeover.seconds * 10).rounded(.up)))
        self.maxEntries = max(1, min(maxEntries, maxBytes / Self.bytesPerEntry))
        state = Mutex(State(table: CompactRecordTable(capacity: self.maxEntries), traces: TraceRing(maxBytes: traceBytes)))
    }

    package var health: ComponentHealth? { nil }

    package var count: Int { state.withLock { $0.table.count } }

    package func claim(_ key: RepeatKey, trace: TraceStart? = nil, instance: String = InstanceName.current, now: Date) -> RecordClaim {
        state.withLock { state in
            let at = state.tenths(now)
            let found: RecordClaim
            switch state.table.find(key) {
            case let entry? where entry.kind == .claimed:
                guard at &- entry.time >= takeover else { return .heldElsewhere }
                found = .takenOver
            case let entry? where entry.time > at:  // answered for good, until `time`
                return .recorded(Self.outcome(entry.kind))
            default:
                found = .claimed
            }
            let traced = trace.flatMap { state.traces.append($0, at: now, instance: instance) }
            state.table.set(key, .init(kind: .claimed, time: at, trace: traced.map { UInt32(truncatingIfNeeded: $0) & 0xFF_FFFF }))
            trim(&state.table, now: at)
            return found
        }
    }

    package func finish(_ key: RepeatKey, _ outcome: RecordedOutcome?, trace end: TraceEnd? = nil, now: Date) {
        state.withLock { state in
            let traced = state.table.find(key)?.trace
            if let end, let traced { state.traces.update(traced) { end.applied(to: &$0, at: now) } }
            if let outcome {
                let until = state.tenths(now.addingTimeInterval(windowSeconds))
                state.table.set(key, .init(kind: Self.kind(outcome), time: until, trace: traced))
            } else {
                state.table.remove(key)
            }
            trim(&state.table, now: state.tenths(now))
        }
    }

    package func claim(_ claims: [RecordClaimRequest], instance: String, now: Date) -> [RecordClaim] {
        claims.map { claim($0.key, trace: $0.trace, instance: instance, now: now) }
    }

    package func finish(_ finishes: [RecordFinish], heard: Bool, now: Date) {
        for finish in finishes { self.finish(finish.key, finish.outcome, trace: finish.trace, now: now) }
        if heard { self.heard(finishes.map(\.key), now: now) }
    }

    package func finish(
        _ finishes: [RecordFinish], heard: Bool, now: Date, landed: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        finish(finishes, heard: heard, now: now)
        landed(.success(()))
    }

    /// A heard delivery is forgotten by the record (a repeat of it is sent); its trace stays.
    package func heard(_ keys: [RepeatKey], now: Date) {
        state.withLock { state in
            for key in keys {
                guard let entry = state.table.find(key), entry.kind != .claimed else { continue }
                state.table.remove(key)
            }
        }
    }

    package func trace(_ start: TraceStart, _ end: TraceEnd, startedAt: Date, instance: String, now: Date) {
        state.withLock { $0.traces.append(start, end, startedAt: startedAt, at: now, instance: instance) }
    }

    package func deliveries(_ query: DeliveryQuery, now: Date) -> [TracedDelivery] {
        state.withLock { $0.traces.matching(query) }
    }

    /// Drops from the front (the oldest entries) those whose time passed: an answer's window, or a
    /// claim older than both the takeover bound and the window. The ring's size bounds the rest.
    private func trim(_ table: inout CompactRecordTable, now: Int32) {
        while true {
            table.skipRemoved()
            guard let oldest = table.oldestEntry else { return }
            let expired = oldest.kind == .claimed ? now &- oldest.time >= max(takeover, window) : oldest.time <= now
            guard expired else { return }
            table.dropOldest()
        }
    }

    private static func kind(_ outcome: RecordedOutcome) -> CompactRecordTable.Kind {
        switch outcome {
        case .delivered: .delivered
        case .rejected: .rejected
        case .dropped: .dropped
        }
    }

    private static func outcome(_ kind: CompactRecordTable.Kind) -> RecordedOutcome {
        switch kind {
        case .rejected: .rejected
        case .dropped: .dropped
        default: .delivered
        }
    }
}
