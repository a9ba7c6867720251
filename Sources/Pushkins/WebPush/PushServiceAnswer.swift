import HeraldCore
import HeraldUpstream
import Logging

/// What a push service's answer means, for Web Push and UnifiedPush alike (RFC 8030: 404/410 the
/// subscription is gone; 429/5xx try again; any other 4xx this message is refused for good).
enum PushServiceAnswer {
    static func classify(_ response: UpstreamResponse, pushkey: String, context: DispatchContext) -> UpstreamVerdict<DeviceOutcome> {
        let reason = OutcomeReason.pushService(status: response.status)
        switch response.status {
        case 200..<300:
            return .done(.delivered)
        case 404, 410:
            return .done(.rejected(reason: reason))
        case 429, 500..<600:
            return .retry(reason)
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
