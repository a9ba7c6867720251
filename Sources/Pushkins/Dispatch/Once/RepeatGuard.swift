import Foundation
import HeraldCore
import Logging
import Synchronization

/// Sends a delivery once per key within the window (docs/operations.md, "Once"): a repeat of a
/// delivery answered for good is answered as then without an upstream call; a repeat of one
/// still under way on this instance joins it and gets its outcome; a failed delivery leaves no
/// record, so the retry really retries. The record is `DeliveryRecords` (memory, or PostgreSQL
/// shared by a fleet); when that store fails, the memory record stands in and `/health` says so.
package final class RepeatGuard: Sendable {
    /// What a key's claim decided.
    package enum Decision: Sendable {
        /// Send it, then `settle` the key.
        case send(RepeatKey)
        /// Answered without sending (recorded, or held by another instance).
        case answered(DeviceOutcome)
        /// Under way on this instance: its outcome, when it has one.
        case join(ReadinessGate<DeviceOutcome>)
    }

    let store: any DeliveryRecords
    /// Stands in while `store` fails.
    let fallback: MemoryDeliveryRecords
    let clock: any HeraldClock
    let counters: CounterCache
    let logger: Logger
    /// The deliveries under way on this instance, by key.
    private let flights = Mutex<[RepeatKey: ReadinessGate<DeviceOutcome>]>([:])

    package init(
        store: any DeliveryRecords, fallback: MemoryDeliveryRecords, clock: any HeraldClock, counters: CounterCache, logger: Logger
    ) {
        self.store = store
        self.fallback = fallback
        self.clock = clock
        self.counters = counters
        self.logger = logger
        _ = counters.counter("herald_notify_repeat_store_fallbacks_total")
    }

    /// Claims `key` for a delivery through `app`.
    package func claim(_ key: RepeatKey, app: String) async -> Decision {
        let gate = ReadinessGate<DeviceOutcome>()
        let existing = flights.withLock { table -> ReadinessGate<DeviceOutcome>? in
            if let existing = table[key] { return existing }
            table[key] = gate
            return nil
        }
        if let existing {
            suppressed(app)
            return .join(existing)
        }
        let found: RecordClaim
        do {
            found = try await store.claim(key, now: clock.date)
        } catch {
            storeFailed(error)
            found = fallback.claim(key, now: clock.date)
        }
        switch found {
        case .claimed:
            return .send(key)
        case .recorded(let outcome):
            flights.withLock { _ = $0.removeValue(forKey: key) }
            gate.open(outcome.outcome)
            suppressed(app)
            return .answered(outcome.outcome)
        case .heldElsewhere:
            flights.withLock { _ = $0.removeValue(forKey: key) }
            let outcome = DeviceOutcome.failed(reason: .heldElsewhere)
            gate.open(outcome)
            return .answered(outcome)
        }
    }

    /// Records the outcome of a claimed key (or releases it: a failure leaves no record) and
    /// answers the repeats that joined it.
    package func settle(_ key: RepeatKey, _ outcome: DeviceOutcome) async {
        let recorded = RecordedOutcome(outcome)
        do {
            try await store.finish(key, recorded, now: clock.date)
        } catch {
            storeFailed(error)
            fallback.finish(key, recorded, now: clock.date)
        }
        flights.withLock { $0.removeValue(forKey: key) }?.open(outcome)
    }

    private func suppressed(_ app: String) {
        counters.increment("herald_notify_repeats_suppressed_total", [("app", app)])
    }

    private func storeFailed(_ error: any Error) {
        counters.increment("herald_notify_repeat_store_fallbacks_total", [])
        if let suppressed = LogThrottle.perDevice.admit("repeat store failed") {
            logger.warning(
                "The delivery record could not be read or written; this instance's memory stands in",
                metadata: ["error": "\(error)", "similar_lines_suppressed": "\(suppressed)"])
        }
    }
}
