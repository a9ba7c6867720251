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

    /// A device no outcome came back for (a dispatch that never reached it): failed, so that its
    /// sender retries.
    package static let notDispatched = DeviceOutcome.failed(reason: .localError("not dispatched"))

    package var isRejected: Bool {
        if case .rejected = self { return true }
        return false
    }

    /// The provider said this device token itself is dead (its own table decides: see its
    /// `ProviderReason`). The front ends that keep tokens (the relay, Status, ADAMANT) drop it on
    /// this, read here rather than from the raw answer. Matrix rejects a little more, as Sygnal
    /// does (a rejection whose reason is the app's and not the token's), and a pushkey Herald
    /// refused itself (`invalidPushkey`) is rejected too, but neither is the provider's word on
    /// the token.
    package var providerSaysTokenIsDead: Bool {
        guard case .rejected(let reason) = self else { return false }
        switch reason {
        case .provider(let answer): return answer.rejectionMeansDeadToken
        // The same delivery was rejected within the window: by the provider, or as invalid.
        case .repeatOfRecorded: return true
        case .heldElsewhere, .answerDeadline, .pushback: return false
        case .unknownAppId, .ambiguousAppId, .invalidPushkey, .invalidDefaultPayload, .nothingToSend, .eventsOnly, .endpointRefused,
            .payloadTooLarge, .inflightLimit, .sourceShare, .deviceBudget, .coalesced, .noPushkin, .localError, .network,
            .authorization:
            return false
        }
    }

    /// A token to forget: the provider says it is dead, or it can never be sent to (a pushkey
    /// Herald refuses itself). What Status and ADAMANT drop their registrations on.
    package var tokenShouldBeDropped: Bool {
        if case .rejected(.invalidPushkey) = self { return true }
        return providerSaysTokenIsDead
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
