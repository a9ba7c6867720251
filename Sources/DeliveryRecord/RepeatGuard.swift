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

    package let store: any DeliveryRecords
    /// Stands in while `store` fails.
    let fallback: MemoryDeliveryRecords
    /// Whether `store` is the memory record itself: then a claim is a plain call, not an await.
    private let inMemory: Bool
    /// Whether the store takes a notify's group in one statement (PostgreSQL): then a group is
    /// claimed at once (`claim(_:app:)`), and its finishes are written after the answer
    /// (`settleAfterAnswer`, `finish`). The memory record takes each key as it comes.
    package var batches: Bool { !inMemory }
    package let clock: any HeraldClock
    let counters: CounterCache
    let logger: Logger
    /// The deliveries under way on this instance, by key.
    private let flights = Mutex<[RepeatKey: Flight]>([:])

    /// A delivery under way on this instance. Each gate is made only when the first repeat
    /// arrives (a delivery nobody repeats costs none).
    private enum Flight {
        /// Being sent: a repeat joins it and gets its outcome.
        case sending(ReadinessGate<DeviceOutcome>?)
        /// Answered, its finish not yet written (`settleAfterAnswer`): a repeat waits for the
        /// finish, then claims from the record, which answers it with the outcome or, heard or
        /// failed, lets it be sent again. The record, not this instance, decides, as for a repeat
        /// that reaches another instance.
        case finishing(ReadinessGate<Void>?)
    }

    /// The deliveries whose finish a repeat waits for (`Flight.finishing`), for tests.
    package var finishesWaitedFor: Int {
        flights.withLock { table in
            table.values.count { flight in
                if case .finishing(.some) = flight { return true }
                return false
            }
        }
    }

    /// What a claim of a key found on this instance.
    private enum Arrival {
        /// No delivery: this caller's is now the one under way.
        case first
        case join(ReadinessGate<DeviceOutcome>)
        /// A delivery whose finish is being written: claim again once it is.
        case wait(ReadinessGate<Void>)
    }

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

    /// Joins the delivery of `key` under way on this instance, or, when there is none, makes
    /// this caller's the one under way (`first`).
    private func arrive(_ key: RepeatKey) -> Arrival {
        flights.withLock { table -> Arrival in
            switch table[key] {
            case nil:
                table[key] = .sending(nil)
                return .first
            case .sending(let gate?): return .join(gate)
            case .sending(nil):
                let gate = ReadinessGate<DeviceOutcome>()
                table[key] = .sending(gate)
                return .join(gate)
            case .finishing(let gate?): return .wait(gate)
            case .finishing(nil):
                let gate = ReadinessGate<Void>()
                table[key] = .finishing(gate)
                return .wait(gate)
            }
        }
    }

    /// `arrive`, after waiting out the finish of an answered delivery of `key` (`first` or
    /// `join`; `wait` only when the caller was cancelled meanwhile).
    private func flight(_ key: RepeatKey) async -> Arrival {
        while true {
            let arrival = arrive(key)
            guard case .wait(let finished) = arrival else { return arrival }
            do { try await finished.wait() } catch { return arrival }
        }
    }

    /// What a caller that was not the first to claim `key` is answered (nil: it was the first).
    private func joined(_ key: RepeatKey, app: String) async -> Decision? {
        switch await flight(key) {
        case .first: return nil
        case .join(let gate):
            suppressed(app)
            return .join(gate)
        case .wait: return .answered(.failed(reason: .localError("cancelled")))
        }
    }

    /// Claims a notify's group of keys for deliveries through `app` in one call of the store (one
    /// statement on PostgreSQL, shared with concurrent notifies'): a decision per key, in order.
    package func claim(_ requests: [RecordClaimRequest], app: String) async -> [Decision] {
        var decisions = [Decision?](repeating: nil, count: requests.count)
        var claimed: [RecordClaimRequest] = []
        var positions: [Int] = []
        for (index, request) in requests.enumerated() {
            if let joined = await joined(request.key, app: app) {
                decisions[index] = joined
            } else {
                claimed.append(request)
                positions.append(index)
            }
        }
        if !claimed.isEmpty {
            let now = clock.date
            let found: [RecordClaim]
            do {
                found = try await store.claim(claimed, instance: instance, now: now)
            } catch {
                storeFailed(error)
                found = fallback.claim(claimed, instance: instance, now: now)
            }
            for (index, (request, claim)) in zip(positions, zip(claimed, found)) {
                decisions[index] = decided(request.key, claim, app: app)
            }
        }
        return decisions.map { $0 ?? .answered(.failed(reason: .heldElsewhere)) }
    }

    /// Claims `key` for a delivery through `app`; `trace`, the device whose delivery it is, when
    /// it is to be traced (a Matrix notify's).
    package func claim(_ key: RepeatKey, app: String, trace: TraceStart? = nil) async -> Decision {
        if let joined = await joined(key, app: app) { return joined }
        let found: RecordClaim
        if inMemory {
            found = fallback.claim(key, trace: trace, instance: instance, now: clock.date)
        } else {
            do {
                found = try await store.claim(key: key, trace: trace, instance: instance, now: clock.date)
            } catch {
                storeFailed(error)
                found = fallback.claim(key, trace: trace, instance: instance, now: clock.date)
            }
        }
        return decided(key, found, app: app)
    }

    /// What a claim's answer means for the delivery of `key`.
    private func decided(_ key: RepeatKey, _ found: RecordClaim, app: String) -> Decision {
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
                try await store.finish(key: key, recorded, trace: end, now: clock.date)
            } catch {
                storeFailed(error)
                fallback.finish(key, recorded, trace: end, now: clock.date)
            }
        }
        land(key, outcome)
    }

    /// Ends a claimed key's delivery on this instance now (the repeats that joined it get
    /// `outcome`; one that comes before the finish is written waits for it, `Flight.finishing`) and
    /// returns its finish, for `finish` to write once the notify is answered; with the memory
    /// record, which costs no round trip, it is settled now and nil is returned.
    package func settleAfterAnswer(_ key: RepeatKey, _ outcome: DeviceOutcome, note: DeliveryNote = DeliveryNote()) async
        -> RecordFinish?
    {
        guard !inMemory else {
            await settle(key, outcome, note: note)
            return nil
        }
        let joined = flights.withLock { table -> ReadinessGate<DeviceOutcome>? in
            defer { table[key] = .finishing(nil) }
            guard case .sending(let gate?) = table[key] else { return nil }
            return gate
        }
        joined?.open(outcome)
        return RecordFinish(key, RecordedOutcome(outcome), trace: TraceEnd(outcome: outcome, note: note))
    }

    /// Writes the finishes `settleAfterAnswer` returned, in one call of the store; `heard`: the
    /// notify's sender heard its answer, so that its repeat is sent again (docs/operations.md,
    /// "Once"). Their deliveries are then over on this instance. Handed to the store without
    /// waiting: `landed` is called once they are over (at once with the memory record).
    package func finish(_ finishes: [RecordFinish], heard: Bool, landed: @escaping @Sendable () -> Void) {
        guard !finishes.isEmpty else { return landed() }
        let now = clock.date
        store.finish(finishes, heard: heard, now: now) { [self] result in
            if case .failure(let error) = result {
                storeFailed(error)
                fallback.finish(finishes, heard: heard, now: now)
            }
            for finish in finishes { land(finish.key, finish.trace?.outcome ?? .failed(reason: .heldElsewhere)) }
            landed()
        }
    }

    /// The senders heard the answers of these deliveries, which the memory record settled as
    /// they were sent (`settle`): a notify that repeats one is sent again (docs/operations.md,
    /// "Once"). A batching store is told with their finishes (`finish`).
    package func heard(_ keys: [RepeatKey]) {
        guard !keys.isEmpty else { return }
        fallback.heard(keys, now: clock.date)
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
        switch flights.withLock({ $0.removeValue(forKey: key) }) {
        case .sending(let joined?): joined.open(outcome)
        case .finishing(let waiting?): waiting.open(())
        case .sending(nil), .finishing(nil), nil: break
        }
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
