package import FoundationEssentials
package import HeraldCore
package import HeraldUpstream
package import Logging
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
    /// Whether `store` is the memory record itself: then a claim is a plain call, not an await.
    private let inMemory: Bool
    let clock: any HeraldClock
    let counters: CounterCache
    let logger: Logger
    /// The deliveries under way on this instance, by key; the gate of the repeats that joined one
    /// is made only when the first of them arrives (a delivery nobody repeats costs no gate).
    private let flights = Mutex<[RepeatKey: ReadinessGate<DeviceOutcome>?]>([:])

    package init(
        store: any DeliveryRecords, fallback: MemoryDeliveryRecords, clock: any HeraldClock, counters: CounterCache, logger: Logger
    ) {
        self.store = store
        self.fallback = fallback
        inMemory = (store as? MemoryDeliveryRecords) === fallback
        self.clock = clock
        self.counters = counters
        self.logger = logger
        _ = counters.counter(MetricName.notifyRepeatStoreFallbacks)
    }

    /// Who this instance is in the traces.
    package var instance: String { InstanceName.current }

    /// Claims `key` for a delivery through `app`; `trace`, the device whose delivery it is, when
    /// it is to be traced (a Matrix notify's).
    package func claim(_ key: RepeatKey, app: String, trace: TraceStart? = nil) async -> Decision {
        let joined = flights.withLock { table -> ReadinessGate<DeviceOutcome>? in
            guard let flight = table[key] else {
                table[key] = .some(nil)
                return nil
            }
            if let gate = flight { return gate }
            let gate = ReadinessGate<DeviceOutcome>()
            table[key] = gate
            return gate
        }
        if let joined {
            suppressed(app)
            return .join(joined)
        }
        let found: RecordClaim
        if inMemory {
            found = fallback.claim(key, trace: trace, instance: instance, now: clock.date)
        } else {
            do {
                found = try await store.claim(key, trace: trace, instance: instance, now: clock.date)
            } catch {
                storeFailed(error)
                found = fallback.claim(key, trace: trace, instance: instance, now: clock.date)
            }
        }
        switch found {
        case .claimed:
            return .send(key)
        case .takenOver:
            counters.increment(MetricName.notifyRepeatTakeovers, [("app", app)])
            logger.warning(
                "Took over the claim of a delivery whose instance did not finish it: sending it; it may have been sent already",
                metadata: ["app": "\(app)", "key": "\(key.digest)"])
            return .send(key)
        case .recorded(let outcome):
            land(key, outcome.outcome)
            suppressed(app)
            return .answered(outcome.outcome)
        case .heldElsewhere:
            let outcome = DeviceOutcome.failed(reason: .heldElsewhere)
            land(key, outcome)
            return .answered(outcome)
        }
    }

    /// Records the outcome of a claimed key (or releases it: a failure leaves no record) and
    /// answers the repeats that joined it; `note`, what its upstream call left for the trace.
    package func settle(_ key: RepeatKey, _ outcome: DeviceOutcome, note: DeliveryNote = DeliveryNote()) async {
        let recorded = RecordedOutcome(outcome)
        let end = TraceEnd(outcome: outcome, note: note)
        if inMemory {
            fallback.finish(key, recorded, trace: end, now: clock.date)
        } else {
            do {
                try await store.finish(key, recorded, trace: end, now: clock.date)
            } catch {
                storeFailed(error)
                fallback.finish(key, recorded, trace: end, now: clock.date)
            }
        }
        land(key, outcome)
    }

    /// The senders heard these deliveries answered: a notify that repeats one is sent again
    /// (docs/operations.md, "Once").
    package func heard(_ keys: [RepeatKey]) async {
        guard !keys.isEmpty else { return }
        fallback.heard(keys, now: clock.date)
        guard !inMemory else { return }
        do {
            try await store.heard(keys, now: clock.date)
        } catch {
            storeFailed(error)
        }
    }

    /// Traces a delivery that was not claimed (`DeliveryRecords.trace`): begun at `startedAt`,
    /// over now.
    package func trace(_ start: TraceStart, _ end: TraceEnd, startedAt: Date) async {
        let now = clock.date
        guard !inMemory else { return fallback.trace(start, end, startedAt: startedAt, instance: instance, now: now) }
        do {
            try await store.trace(start, end, startedAt: startedAt, instance: instance, now: now)
        } catch {
            storeFailed(error)
            fallback.trace(start, end, startedAt: startedAt, instance: instance, now: now)
        }
    }

    /// What became of one event's deliveries (docs/operations.md, "Why didn't my phone ring?"):
    /// from the fleet's record, or this instance's memory while that fails.
    package func deliveries(_ query: DeliveryQuery) async -> [TracedDelivery] {
        guard !inMemory else { return fallback.deliveries(query, now: clock.date) }
        do {
            return try await store.deliveries(query, now: clock.date)
        } catch {
            storeFailed(error)
            return fallback.deliveries(query, now: clock.date)
        }
    }

    /// The delivery of `key` is over on this instance: the repeats that joined it get `outcome`.
    private func land(_ key: RepeatKey, _ outcome: DeviceOutcome) {
        let joined = flights.withLock { $0.removeValue(forKey: key) }
        if case .some(.some(let gate)) = joined { gate.open(outcome) }
    }

    private func suppressed(_ app: String) {
        counters.increment(MetricName.notifyRepeatsSuppressed, [("app", app)])
    }

    private func storeFailed(_ error: any Error) {
        counters.increment(MetricName.notifyRepeatStoreFallbacks, [])
        if let suppressed = LogThrottle.perDevice.admit("repeat store failed") {
            logger.warning(
                "The delivery record could not be read or written; this instance's memory stands in",
                metadata: ["error": "\(error)", "similar_lines_suppressed": "\(suppressed)"])
        }
    }
}
