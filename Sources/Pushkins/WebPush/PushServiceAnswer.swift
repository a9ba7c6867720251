package import HeraldCore
import HeraldUpstream

/// A push service's answer, as a device's outcome carries it (Web Push and UnifiedPush alike).
package struct PushServiceReason: ProviderReason, Equatable {
    package let status: Int

    package var label: String { "http_\(status)" }
    package var description: String { "push service answered \(status)" }
    package var rejectionMeansDeadToken: Bool { PushServiceAnswer.disposition(status: status) == .deadToken }
}

extension OutcomeReason {
    /// A Web Push or UnifiedPush service answered `status`.
    package static func pushService(status: Int) -> OutcomeReason { .provider(PushServiceReason(status: status)) }
}

/// What a push service's answer means, for Web Push and UnifiedPush alike (RFC 8030: 404/410 the
/// subscription is gone; 429/5xx try again; any other 4xx this message is refused for good).
enum PushServiceAnswer {
    /// The one table.
    static func disposition(status: Int) -> AnswerDisposition {
        switch status {
        case 200..<300: return .delivered
        case 404, 410: return .deadToken
        case 429, 500..<600: return .temporary
        default: return .dropped
        }
    }

    static func classify(_ response: UpstreamResponse, pushkey: String, context: DispatchContext, badJwtWarning: OneTimeFlag)
        -> UpstreamVerdict<DeviceOutcome>
    {
        let disposition = disposition(status: response.status)
        if disposition == .dropped {
            if response.status == 403, response.bodyText.contains("BadJwtToken") {
                // Apple's push service says this of a VAPID subject it cannot resolve; every push
                // of the app fails alike until the operator changes it: said once per app.
                if badJwtWarning.fire() {
                    context.logger.error(
                        "The push service refused the VAPID token (403 BadJwtToken): Apple's refuses a vapid_contact_email whose domain it cannot resolve; set it to an address at a public domain",
                        metadata: ["body": "\(response.bodyText.prefix(200))"])
                }
            } else {
                context.logger.warning(
                    "Push service refused the message",
                    metadata: [
                        "status": "\(response.status)", "body": "\(response.bodyText.prefix(200))",
                        "pushkey": "\(Redaction.pushkey(pushkey))",
                    ])
            }
        }
        return disposition.verdict(.pushService(status: response.status))
    }
}

/// A device outcome carried as an error, for `Result`.
struct OutcomeFailure: Error {
    let outcome: DeviceOutcome
    init(_ outcome: DeviceOutcome) { self.outcome = outcome }
}
