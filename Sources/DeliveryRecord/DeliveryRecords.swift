package import FoundationEssentials
package import HeraldCore

/// What is remembered of a delivery the upstream answered for good: a repeat within the window
/// gets the same answer without a second upstream call. A failed delivery leaves no record.
package enum RecordedOutcome: String, Sendable, Equatable {
    /// Accepted by the upstream.
    case delivered
    /// The token is dead (the homeserver deletes the pusher).
    case rejected
    /// Refused for good for this message (too large, refused by policy).
    case dropped

    package init?(_ outcome: DeviceOutcome) {
        switch outcome {
        case .delivered: self = .delivered
        case .rejected: self = .rejected
        case .dropped: self = .dropped
        case .failed, .skipped: return nil
        }
    }

    /// The outcome a repeat is answered with.
    var outcome: DeviceOutcome {
        switch self {
        case .delivered: return .delivered
        case .rejected: return .rejected(reason: .repeatOfRecorded)
        case .dropped: return .dropped(reason: .repeatOfRecorded)
        }
    }
}

/// What a claim on a key found.
package enum RecordClaim: Sendable, Equatable {
    /// Nobody holds it: this instance sends, then records or releases it.
    case claimed
    /// Claimed, from a claim older than the takeover bound: an instance that died during its call,
    /// which the upstream may or may not have received. This instance sends it (again).
    case takenOver
    /// Answered for good within the window.
    case recorded(RecordedOutcome)
    /// Another instance claimed it and has not finished (its claim is younger than the takeover
    /// bound): its upstream call may be under way.
    case heldElsewhere
}

/// One key of a claim: the delivery's key and, when it is traced, its trace's start.
package struct RecordClaimRequest: Sendable {
    package var key: RepeatKey
    package var trace: TraceStart?

    package init(_ key: RepeatKey, trace: TraceStart? = nil) {
        self.key = key
        self.trace = trace
    }
}

/// One key's end: its outcome to record (nil: released, the delivery failed), and its trace's end.
package struct RecordFinish: Sendable {
    package var key: RepeatKey
    package var outcome: RecordedOutcome?
    package var trace: TraceEnd?

    package init(_ key: RepeatKey, _ outcome: RecordedOutcome?, trace: TraceEnd? = nil) {
        self.key = key
        self.outcome = outcome
        self.trace = trace
    }
}

/// Where deliveries are recorded (docs/configuration.md, `notify.repeat_store`): in memory on one
/// instance, in PostgreSQL for a fleet. Every operation is bounded; a store that throws is
/// replaced by the memory record for that call.
///
/// The record answers two questions: whether a notify is a repeat whose answer its sender may
/// not have heard (docs/operations.md, "Once"), and, for an operator, what became of one event's
/// deliveries (the trace). Claims and finishes come a notify's group at a time: PostgreSQL makes
/// one statement of each group, and of the groups of concurrent notifies.
package protocol DeliveryRecords: Sendable {
    /// Claims each key at `now`, for a delivery answered within `window`; a claim older than
    /// `takeover` is an instance that died and is taken over. A key's trace starts, under way, in
    /// the name of `instance`. One answer per key, in their order.
    func claim(_ claims: [RecordClaimRequest], instance: String, now: Date) async throws -> [RecordClaim]
    /// Records the outcome of each claimed key (answered from until `now + window`, or, when its
    /// sender already `heard` the answer, not at all: its trace stays), or, with nil, releases it
    /// (the delivery failed: the retry really retries). Each trace ends with its `trace`.
    func finish(_ finishes: [RecordFinish], heard: Bool, now: Date) async throws
    /// `finish`, handed over without waiting (a notify's after its answer): `landed` gets its
    /// result once written, on whichever task wrote it; the memory record calls it at once.
    func finish(_ finishes: [RecordFinish], heard: Bool, now: Date, landed: @escaping @Sendable (Result<Void, any Error>) -> Void)
    /// The trace of a delivery that is not claimed (Status's and ADAMANT's, whose stores keep their
    /// repeats apart): begun at `startedAt` in the name of `instance`, ended by `end` at `now`.
    func trace(_ start: TraceStart, _ end: TraceEnd, startedAt: Date, instance: String, now: Date) async throws
    /// The traced deliveries `query` asks for (one event's, or one device's), oldest first.
    func deliveries(_ query: DeliveryQuery, now: Date) async throws -> [TracedDelivery]
    /// Its health, for `/health` and `herald_component_failing` (nil: it cannot fail).
    var health: ComponentHealth? { get }
}

extension DeliveryRecords {
    /// One key's claim.
    package func claim(key: RepeatKey, trace: TraceStart?, instance: String, now: Date) async throws -> RecordClaim {
        try await claim([RecordClaimRequest(key, trace: trace)], instance: instance, now: now).first ?? .heldElsewhere
    }

    /// One key's finish, its sender not known to have heard it.
    package func finish(key: RepeatKey, _ outcome: RecordedOutcome?, trace end: TraceEnd?, now: Date) async throws {
        try await finish([RecordFinish(key, outcome, trace: end)], heard: false, now: now)
    }
}
