/// What became of one device of a notification.
package enum DeviceOutcome: Sendable, Equatable {
    /// The upstream accepted the message.
    case delivered
    /// The pushkey is dead (unregistered, invalid): it goes into `rejected` and the homeserver
    /// deletes the pusher.
    case rejected(reason: OutcomeReason)
    /// Nothing had to be sent (no content and no badge, `events_only`, an endpoint not allowed).
    case skipped(reason: OutcomeReason)
    /// The upstream refused this message for good; retrying the whole request cannot help, so the
    /// request still succeeds. Logged and counted.
    case dropped(reason: OutcomeReason)
    /// Not delivered now (upstream unavailable, retry budget spent, in-flight limit): the request
    /// answers 502 so that the homeserver retries it later.
    case failed(reason: OutcomeReason)

    package var isRejected: Bool {
        if case .rejected = self { return true }
        return false
    }

    /// A short label for logs and metrics: `delivered`, `rejected`, `skipped`, `dropped`, `failed`.
    package var label: String {
        switch self {
        case .delivered: return "delivered"
        case .rejected: return "rejected"
        case .skipped: return "skipped"
        case .dropped: return "dropped"
        case .failed: return "failed"
        }
    }

    package var reason: OutcomeReason? {
        switch self {
        case .delivered: return nil
        case .rejected(let r), .skipped(let r), .dropped(let r), .failed(let r): return r
        }
    }
}
