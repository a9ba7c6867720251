package import FoundationEssentials
package import HeraldCore
package import HeraldUpstream

/// One device's delivery of one event as the trace shows it (docs/operations.md, "Why didn't my
/// phone ring?"): what became of it, when, after how many attempts, on which instance, and the
/// provider's id for the message.
package struct TracedDelivery: Sendable, Equatable {
    package enum State: String, Sendable {
        case inFlight = "in_flight"
        case delivered, rejected, dropped, skipped, failed
        /// Failed because the upstream's pushback held its origin: nothing was sent.
        case held
    }

    package var eventId: String
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
        eventId: String, appId: String, pushkey: String, state: State, reason: String? = nil, detail: String? = nil,
        startedAt: Date, finishedAt: Date? = nil, attempts: Int = 0, instance: String, providerId: String? = nil,
        target: String? = nil
    ) {
        self.eventId = eventId
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

/// What a delivery's trace starts with, when it is claimed: the event, the app and the device.
package struct TraceStart: Sendable {
    package var eventId: String
    package var appId: String
    package var pushkey: String

    package init(eventId: String, appId: String, pushkey: String) {
        self.eventId = eventId
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

/// Which deliveries an operator asks about: one event, for one device or one app, or all.
package struct DeliveryQuery: Sendable {
    package var eventId: String
    package var pushkey: String?
    package var appId: String?

    package init(eventId: String, pushkey: String? = nil, appId: String? = nil) {
        self.eventId = eventId
        self.pushkey = pushkey
        self.appId = appId
    }
}
