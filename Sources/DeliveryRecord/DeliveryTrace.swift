package import FoundationEssentials
package import HeraldCore
package import HeraldUpstream

/// One device's delivery of one event as the trace shows it (docs/operations.md, "Why didn't my
/// phone ring?"): what became of it, when, after how many attempts, on which instance, and the
/// provider's id for the message. The event is named in its front end's words (`frontEnd`): a
/// Matrix event id, a Status message id, a gorush `notif_id`, a relayed request's id, an ADAMANT
/// transaction id.
package struct TracedDelivery: Sendable, Equatable {
    package enum State: String, Sendable {
        case inFlight = "in_flight"
        case delivered, rejected, dropped, skipped, failed
        /// Failed because the upstream's pushback held its origin: nothing was sent.
        case held
    }

    package var eventId: String
    /// The front end the event came through (`TraceStart.frontEnd`).
    package var frontEnd: String
    package var appId: String
    /// Shortened as in the logs.
    package var pushkey: String
    package var state: State
    /// The outcome's reason label (`herald_device_outcomes_total`'s) and its text.
    package var reason: String?
    package var detail: String?
    package var startedAt: Date
    package var finishedAt: Date?
    package var attempts: Int
    package var instance: String
    package var providerId: String?
    /// FCM: `token` or `fid`, the member the message named the device by.
    package var target: String?

    package init(
        eventId: String, frontEnd: String = TraceStart.matrix, appId: String, pushkey: String, state: State,
        reason: String? = nil, detail: String? = nil, startedAt: Date, finishedAt: Date? = nil, attempts: Int = 0,
        instance: String, providerId: String? = nil, target: String? = nil
    ) {
        self.eventId = eventId
        self.frontEnd = frontEnd
        self.appId = appId
        self.pushkey = pushkey
        self.state = state
        self.reason = reason
        self.detail = detail
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.attempts = attempts
        self.instance = instance
        self.providerId = providerId
        self.target = target
    }
}

/// What a delivery's trace starts with, when it is claimed: the event, the front end whose words
/// name it, the app and the device.
package struct TraceStart: Sendable {
    package var eventId: String
    /// Which front end's id `eventId` is (`herald trace` words it so): a label the front end
    /// gives, never read by delivery.
    package var frontEnd: String
    package var appId: String
    package var pushkey: String

    /// A Matrix notify's front end, the default.
    package static let matrix = "matrix"

    package init(eventId: String, frontEnd: String = TraceStart.matrix, appId: String, pushkey: String) {
        self.eventId = eventId
        self.frontEnd = frontEnd
        self.appId = appId
        self.pushkey = pushkey
    }
}

/// What a delivery's trace ends with: its outcome and the upstream call's note.
package struct TraceEnd: Sendable {
    package var outcome: DeviceOutcome
    package var note: DeliveryNote

    package init(outcome: DeviceOutcome, note: DeliveryNote) {
        self.outcome = outcome
        self.note = note
    }

    package var state: TracedDelivery.State {
        switch outcome {
        case .delivered: return .delivered
        case .rejected: return .rejected
        case .dropped: return .dropped
        case .skipped: return .skipped
        case .failed(.pushback): return .held
        case .failed: return .failed
        }
    }

    /// `trace` finished at `at`.
    func applied(to trace: inout TracedDelivery, at: Date) {
        trace.state = state
        trace.reason = outcome.reason?.label
        trace.detail = outcome.reason.map(String.init(describing:))
        trace.finishedAt = at
        trace.attempts = note.attempts
        trace.providerId = note.providerId
        trace.target = note.target
    }
}

/// Which deliveries an operator asks about: one event's, or one device's (a Status or relay token
/// has no event an operator knows), narrowed to one device or one app.
package struct DeliveryQuery: Sendable {
    package var eventId: String?
    package var pushkey: String?
    package var appId: String?

    /// An event, a device, or both.
    package init(eventId: String?, pushkey: String? = nil, appId: String? = nil) {
        self.eventId = eventId
        self.pushkey = pushkey
        self.appId = appId
    }

    /// Whether a delivery of `eventId` to `pushkey` (the full key) through `appId` is asked about.
    func matches(eventId: String, pushkey: String, appId: String) -> Bool {
        if let asked = self.eventId, asked != eventId { return false }
        if let asked = self.pushkey, asked != pushkey { return false }
        if let asked = self.appId, asked != appId { return false }
        return true
    }
}
