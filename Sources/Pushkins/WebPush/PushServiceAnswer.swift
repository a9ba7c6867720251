import HeraldCore
import HeraldUpstream
import Logging

/// What a push service's answer means, for Web Push and UnifiedPush alike (RFC 8030: 404/410 the
/// subscription is gone; 429/5xx try again; any other 4xx this message is refused for good).
enum PushServiceAnswer {
    static func classify(_ response: UpstreamResponse, pushkey: String, context: DispatchContext, badJwtWarning: OneTimeFlag)
        -> UpstreamVerdict<DeviceOutcome>
    {
        let reason = OutcomeReason.pushService(status: response.status)
        switch response.status {
        case 200..<300:
            return .done(.delivered)
        case 404, 410:
            return .done(.rejected(reason: reason))
        case 429, 500..<600:
            return .retry(reason)
        case 403 where response.bodyText.contains("BadJwtToken"):
            // Apple's push service says this of a VAPID subject it cannot resolve; every push of
            // the app fails alike until the operator changes it: said once per app.
            if badJwtWarning.fire() {
                context.logger.error(
                    "The push service refused the VAPID token (403 BadJwtToken): Apple's refuses a vapid_contact_email whose domain it cannot resolve; set it to an address at a public domain",
                    metadata: ["body": "\(response.bodyText.prefix(200))"])
            }
            return .done(.dropped(reason: reason))
        default:
            context.logger.warning(
                "Push service refused the message",
                metadata: [
                    "status": "\(response.status)", "body": "\(response.bodyText.prefix(200))", "pushkey": "\(Redaction.pushkey(pushkey))",
                ])
            return .done(.dropped(reason: reason))
        }
    }
}

/// A device outcome carried as an error, for `Result`.
struct OutcomeFailure: Error {
    let outcome: DeviceOutcome
    init(_ outcome: DeviceOutcome) { self.outcome = outcome }
}
