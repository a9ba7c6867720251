/// Why a device got its outcome.
///
/// A closed set: each reason has a `label` of bounded cardinality (the `reason` label of
/// `herald_device_outcomes_total` and the `reason` log field) and a `description` for people
/// (logs, the `error` text of a 502). Provider answers carry the provider's own typed reason, so a
/// reason a pushkin does not handle is a compile error in its classification, not a string that
/// slips through.
///
/// A provider's answer is `.provider` with the provider's own reason type; the core knows it only
/// through `ProviderReason`.
package enum OutcomeReason: Sendable, Equatable, CustomStringConvertible {
    // Decided before any upstream call.
    /// No configured app matches the device's `app_id`.
    case unknownAppId
    /// Several app globs match the device's `app_id`.
    case ambiguousAppId
    /// The pushkey (or a device field it needs) can never be sent to: what is wrong with it.
    case invalidPushkey(String)
    /// `data.default_payload` is not a JSON object.
    case invalidDefaultPayload
    /// The notification carries nothing this provider would show (no content, no badge).
    case nothingToSend
    /// A Web Push subscription with `events_only` and a notification without an event.
    case eventsOnly
    /// The endpoint is refused by the app's policy (`allowed_endpoints`, private address, http).
    case endpointRefused(String)
    /// The payload cannot be made to fit the provider's size limit.
    case payloadTooLarge
    /// `inflight_request_limit` of the app was reached.
    case inflightLimit
    /// The app is full and the request's source holds its share of it (docs/operations.md,
    /// "Sources"): the sender is told to back off.
    case sourceShare
    /// The device has had its app's `per_device_per_minute`: not sent; the whole seconds until
    /// the budget allows one more.
    case deviceBudget(seconds: Int)
    /// A badge update past the device's budget, replaced by a later one before it could be sent.
    case coalesced
    /// The app or front end has no pushkin for this kind of device (e.g. no APNs app for Status).
    case noPushkin(String)
    /// Herald could not build the request (signing, encryption): what failed.
    case localError(String)

    // Decided by the delivery record (docs/operations.md, "Once").
    /// A repeat of a delivery answered for good within `notify.repeat_window`: answered as then,
    /// without a second upstream call.
    case repeatOfRecorded
    /// Another instance holds the same delivery and has not finished: the sender retries later.
    case heldElsewhere
    /// The upstream had not answered within `notify.answer_within`: the call goes on, and its
    /// outcome is recorded for the sender's retry.
    case answerDeadline

    // Answers from upstream.
    /// The provider's answer, in its own words (its type lives in its pushkin's folder).
    case provider(any ProviderReason)
    /// The upstream could not be reached or did not answer in time: the error, for logs.
    case network(String)
    /// The OAuth token endpoint could not give an access token: why.
    case authorization(String)
    /// The upstream origin asked for a pause (a 429, or a 503 with `Retry-After`) and it has not
    /// ended: nothing was sent (docs/operations.md, "Pushback"). The whole seconds left.
    case pushback(seconds: Int)

    /// The metric label: a bounded vocabulary (no free text, no pushkeys).
    package var label: String {
        switch self {
        case .unknownAppId: return "unknown_app_id"
        case .ambiguousAppId: return "ambiguous_app_id"
        case .invalidPushkey: return "invalid_pushkey"
        case .invalidDefaultPayload: return "invalid_default_payload"
        case .nothingToSend: return "nothing_to_send"
        case .eventsOnly: return "events_only"
        case .endpointRefused: return "endpoint_refused"
        case .payloadTooLarge: return "payload_too_large"
        case .inflightLimit: return "inflight_limit"
        case .sourceShare: return "source_share"
        case .deviceBudget: return "device_budget"
        case .coalesced: return "coalesced"
        case .noPushkin: return "no_pushkin"
        case .localError: return "local_error"
        case .repeatOfRecorded: return "repeat"
        case .heldElsewhere: return "held_elsewhere"
        case .answerDeadline: return "answer_deadline"
        case .provider(let reason): return reason.label
        case .network: return "network"
        case .authorization: return "authorization"
        case .pushback: return "pushback"
        }
    }

    package var description: String {
        switch self {
        case .unknownAppId: return "unknown app id"
        case .ambiguousAppId: return "ambiguous app id"
        case .invalidPushkey(let why): return why
        case .invalidDefaultPayload: return "default_payload is not an object"
        case .nothingToSend: return "nothing to send"
        case .eventsOnly: return "events_only and no event_id"
        case .endpointRefused(let why): return why
        case .payloadTooLarge: return "payload cannot be made to fit the provider's size limit"
        case .inflightLimit: return "too many requests in flight"
        case .sourceShare: return "this sender's share of the app's capacity is in use; send less at once"
        case .deviceBudget(let seconds):
            return "the device has had its pushes for this minute (per_device_per_minute); the next in \(seconds) s"
        case .coalesced: return "a badge update replaced by a later one while the device's budget was spent"
        case .noPushkin(let why): return why
        case .localError(let why): return why
        case .repeatOfRecorded: return "a repeat of a delivery already answered"
        case .heldElsewhere: return "the same delivery is under way on another instance"
        case .answerDeadline: return "the upstream has not answered yet; its answer is recorded for the retry"
        case .provider(let reason): return reason.description
        // The error itself (addresses, ports) is in Herald's log, never in what a sender reads.
        case .network: return "network error: the upstream could not be reached"
        case .authorization(let why): return "OAuth token: \(why)"
        case .pushback(let seconds): return "the upstream asked for a pause; nothing is sent to it for \(seconds) s more"
        }
    }

    package static func == (a: Self, b: Self) -> Bool {
        switch (a, b) {
        case (.provider(let x), .provider(let y)): return x.isSame(as: y)
        case (.provider, _), (_, .provider): return false
        case (.invalidPushkey(let x), .invalidPushkey(let y)), (.endpointRefused(let x), .endpointRefused(let y)),
            (.noPushkin(let x), .noPushkin(let y)), (.localError(let x), .localError(let y)), (.network(let x), .network(let y)),
            (.authorization(let x), .authorization(let y)):
            return x == y
        // The other cases carry nothing: one label each.
        default: return a.label == b.label
        }
    }
}
