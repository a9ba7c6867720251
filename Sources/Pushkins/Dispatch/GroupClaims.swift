import DeliveryRecord
import HeraldCore
import HeraldUpstream

/// What the delivery record decided for a keyed group, as a value: the one keyed path of every
/// front end (a Matrix notify's devices, the relay's message, a gorush notification's tokens;
/// docs/operations.md, "Once"). A member is sent, answered without a send (recorded, or held by
/// another instance), or joined to the same delivery under way on this instance. `claim` asks the
/// record, `sending` picks the members to send, `settle` ends their deliveries, and `outcomes`
/// puts every member's outcome back in its place.
struct GroupClaims {
    /// The members' keys, in order (nil: a member that is never a repeat, always sent).
    private let all: [RepeatKey?]
    /// The keys of the members to send, once a member is not sent (nil while every member is:
    /// they are then `all`, so that a group whose every member is sent makes no second list).
    private var sentKeys: [RepeatKey?]?
    /// The positions of the members to send, alongside `sentKeys`.
    private var positions: [Int]?
    /// The outcomes known without a send, by position; made when the first is known.
    private var answered: [DeviceOutcome?] = []
    /// The members that joined a delivery under way, with its gate.
    private var joined: [(position: Int, flight: ReadinessGate<DeviceOutcome>)] = []
    /// The members answered from the record or joined (a member held by another instance is not
    /// one: it is neither sent nor answered yet).
    private(set) var repeats = 0

    private init(_ keys: [RepeatKey?]) { all = keys }

    /// The keys of the members to send, in order.
    var keys: [RepeatKey?] { sentKeys ?? all }

    /// Claims `keys` for deliveries through `app`: a batching store (PostgreSQL) in one call for
    /// the group, the memory record key by key. `trace`: the member at a position's trace.
    static func claim(
        _ keys: [RepeatKey?], app: String, guardian: RepeatGuard, trace: (Int) -> TraceStart?
    ) async -> GroupClaims {
        var claims = GroupClaims(keys)
        var batched: [RepeatGuard.Decision]?
        if guardian.batches {
            var requests: [RecordClaimRequest] = []
            requests.reserveCapacity(keys.count)
            for (position, key) in keys.enumerated() {
                if let key { requests.append(RecordClaimRequest(key, trace: trace(position))) }
            }
            if !requests.isEmpty { batched = await guardian.claim(requests, app: app) }
        }
        var next = 0
        for (position, key) in keys.enumerated() {
            guard let key else {
                claims.send(position, nil)
                continue
            }
            let decision: RepeatGuard.Decision
            if let batched {
                decision = next < batched.count ? batched[next] : .answered(.failed(reason: .heldElsewhere))
                next += 1
            } else {
                decision = await guardian.claim(key, app: app, trace: trace(position))
            }
            switch decision {
            case .send: claims.send(position, key)
            case .answered(let outcome):
                claims.notSent(position)
                if claims.answered.isEmpty { claims.answered = [DeviceOutcome?](repeating: nil, count: keys.count) }
                claims.answered[position] = outcome
                if outcome.reason != .heldElsewhere { claims.repeats += 1 }
            case .join(let flight):
                claims.notSent(position)
                claims.joined.append((position, flight))
                claims.repeats += 1
            }
        }
        return claims
    }

    private mutating func send(_ position: Int, _ key: RepeatKey?) {
        guard positions != nil else { return }
        positions?.append(position)
        sentKeys?.append(key)
    }

    /// The member at `position` is not sent: from now on the members to send are listed (every
    /// one before it was sent).
    private mutating func notSent(_ position: Int) {
        guard positions == nil else { return }
        positions = Array(0..<position)
        sentKeys = Array(all[0..<position])
    }

    /// The members to send, of `members` (the group's, in the keys' order).
    func sending<Member>(_ members: [Member]) -> [Member] {
        positions.map { $0.map { members[$0] } } ?? members
    }

    /// Ends the deliveries of the members sent (`sent`, their results, in `sending`'s order, each
    /// with what its upstream call left for the trace): the memory
    /// record settles each now and returns the key of each answered for good (heard, once the
    /// answer is, by `RepeatGuard.heard`); a batching store's finishes are returned, to be written
    /// in one call (`RepeatGuard.finish`).
    func settle(
        _ sent: [DeviceResult], guardian: RepeatGuard
    ) async -> (settled: [RepeatKey], finishes: [RecordFinish]) {
        var settled: [RepeatKey] = []
        var finishes: [RecordFinish] = []
        for (key, result) in zip(keys, sent) {
            guard let key else { continue }
            if let finish = await guardian.settleAfterAnswer(key, result.outcome, note: result.note) {
                finishes.append(finish)
            } else if RecordedOutcome(result.outcome) != nil {
                settled.append(key)
            }
        }
        return (settled, finishes)
    }

    /// Every member's outcome, in order: the sent members' (`sent`, in `sending`'s order), those
    /// known without a send, and those that joined a delivery under way, once it has one. When
    /// every member was sent, `sent` as it is.
    func outcomes(sent: [DeviceResult], once: Once) async -> [DeviceOutcome] {
        guard let positions else { return sent.map(\.outcome) }
        var outcomes = answered.isEmpty ? [DeviceOutcome?](repeating: nil, count: all.count) : answered
        for (position, result) in zip(positions, sent) { outcomes[position] = result.outcome }
        for entry in joined { outcomes[entry.position] = await once.outcome(of: entry.flight) }
        return outcomes.map { $0 ?? .notDispatched }
    }
}
