import Logging
import Metrics

/// What Web Push and UnifiedPush share: a device's endpoint checked against the app's policy, and
/// what a push service's answer means (RFC 8030: 404/410 the subscription is gone; 429/5xx try
/// again; any other 4xx this message is refused for good).
enum PushServiceEndpoint {
    /// The endpoint to POST to, or the outcome that ends the device here.
    static func admit(
        _ url: String, policy: EndpointPolicy, refusals: Counter, pushkey: String, context: DispatchContext
    ) async -> Result<EndpointPolicy.Endpoint, OutcomeFailure> {
        switch await policy.check(url) {
        case .allowed(let endpoint):
            return .success(endpoint)
        case .malformed(let reason):
            return .failure(OutcomeFailure(.rejected(reason: .invalidPushkey(reason))))
        case .unresolvable(let reason):
            context.logger.warning(
                "Push endpoint does not resolve", metadata: ["reason": "\(reason)", "pushkey": "\(Redaction.pushkey(pushkey))"])
            return .failure(OutcomeFailure(.failed(reason: .network(reason))))
        case .refused(let reason):
            refusals.increment()
            context.logger.warning("Push endpoint refused", metadata: ["reason": "\(reason)", "pushkey": "\(Redaction.pushkey(pushkey))"])
            return .failure(OutcomeFailure(.skipped(reason: .endpointRefused(reason))))
        }
    }

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
