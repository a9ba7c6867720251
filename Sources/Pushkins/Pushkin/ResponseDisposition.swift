package import HeraldCore
package import HeraldUpstream

/// What a provider's answer means for one device, in the words every provider's table answers in.
/// Each provider has one exhaustive table from its answer to one of these (`APNsDisposition`,
/// `FCMDisposition`, `PushServiceDisposition`, …), and `verdict` is the one switch from it to what
/// the upstream call does next.
package enum ResponseDisposition: Sendable, Equatable {
    case delivered
    /// The device token is dead: the pushkey is rejected, and the front ends that keep tokens
    /// forget it.
    case deadToken
    /// The pushkey is rejected, as Sygnal does, though the reason is the app's rather than the
    /// token's: the front ends that keep tokens keep it.
    case rejectedForTheApp
    /// The credential (a provider token, an access token) was refused: renew it and send again,
    /// once.
    case renewCredential
    /// Worth another attempt within the retry budget.
    case temporary
    /// Fails at once without a retry, so that the sender backs off (the provider is throttling
    /// this device).
    case throttled
    /// Retrying cannot help: the device fails (a configuration or request problem), and the
    /// pushkin logs the answer as an error.
    case permanent
    /// The provider refused this message for good, and the request still succeeds.
    case dropped

    /// What the upstream call does with an answer of this disposition. `refused` runs for
    /// `permanent` only: the pushkin's error log, with what its answer says.
    package func verdict(_ reason: OutcomeReason, refused: () -> Void = {}) -> UpstreamVerdict<DeviceOutcome> {
        switch self {
        case .delivered: return .done(.delivered)
        case .deadToken, .rejectedForTheApp: return .done(.rejected(reason: reason))
        case .renewCredential: return .renewCredential(reason)
        case .temporary: return .retry(reason)
        case .throttled: return .done(.failed(reason: reason))
        case .dropped: return .done(.dropped(reason: reason))
        case .permanent:
            refused()
            return .done(.failed(reason: reason))
        }
    }
}
