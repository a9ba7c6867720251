package import HeraldCore
import HeraldUpstream
import Synchronization

/// A push service's answer, as a device's outcome carries it (Web Push and UnifiedPush alike).
package struct PushServiceReason: ProviderReason, Equatable {
    package let status: Int
    /// A refusal that names what the request lacks, and the service's words: a reference, made only
    /// for such a refusal, so that the reason stays within an existential's inline storage (every
    /// answer's reason is made; a larger one would be boxed on the heap for each).
    private let refusal: Refusal?

    final class Refusal: Sendable {
        let requirement: PushServiceRequirement
        let said: String?
        init(_ requirement: PushServiceRequirement, said: String?) {
            self.requirement = requirement
            self.said = said
        }
    }

    package init(status: Int, requirement: PushServiceRequirement? = nil, said: String? = nil) {
        self.status = status
        refusal = requirement.map { Refusal($0, said: said) }
    }

    /// What the refusal says the request lacks, when it says so.
    package var requirement: PushServiceRequirement? { refusal?.requirement }
    /// The service's own words with such a refusal (`PushServiceRequirement.said`).
    package var said: String? { refusal?.said }

    package static func == (a: PushServiceReason, b: PushServiceReason) -> Bool {
        a.status == b.status && a.requirement == b.requirement && a.said == b.said
    }

    package var label: String { requirement?.rawValue ?? "http_\(status)" }
    package var description: String {
        guard let requirement else { return "push service answered \(status)" }
        return "push service answered \(status): \(requirement.summary)" + (said.map { " (it said: \($0))" } ?? "")
    }
    package var rejectionMeansDeadToken: Bool { PushServiceVerdict.disposition(status: status) == .deadToken }
}

extension OutcomeReason {
    /// A Web Push or UnifiedPush service answered `status`.
    package static func pushService(status: Int) -> OutcomeReason { .provider(PushServiceReason(status: status)) }
}

/// What a push service's answer means, for Web Push and UnifiedPush alike (RFC 8030: 404/410 the
/// subscription is gone; 429/5xx try again; any other 4xx this message is refused for good).
enum PushServiceVerdict {
    /// The one table.
    static func disposition(status: Int) -> ResponseDisposition {
        switch status {
        case 200..<300: return .delivered
        case 404, 410: return .deadToken
        case 429, 500..<600: return .temporary
        default: return .dropped
        }
    }

    static func classify(
        _ response: UpstreamResponse, pushkey: String, origin: String, context: DispatchContext, warnings: PushServiceWarnings
    ) -> UpstreamVerdict<DeviceOutcome> {
        let disposition = disposition(status: response.status)
        if disposition == .dropped, let requirement = PushServiceRequirement.of(status: response.status, body: response.bodyText) {
            let said = PushServiceRequirement.said(response.bodyText)
            if warnings.first(requirement, origin: origin) {
                context.logger.warning(
                    "The push service refused the message: \(requirement.fix)",
                    metadata: [
                        "status": "\(response.status)", "reason": "\(requirement.rawValue)", "origin": "\(origin)", "body": "\(said)",
                        "pushkey": "\(Redaction.pushkey(pushkey))",
                    ])
            }
            let reason = PushServiceReason(status: response.status, requirement: requirement, said: said.isEmpty ? nil : said)
            return disposition.verdict(.provider(reason))
        }
        if disposition == .dropped {
            if response.status == 403, response.bodyText.contains("BadJwtToken") {
                // Apple's push service says this of a VAPID subject it cannot resolve; every push
                // of the app fails alike until the operator changes it: said once per app.
                if warnings.badJwt.fire() {
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

/// The warnings a push-service app says once: Apple's "403 BadJwtToken", and each requirement a
/// refusal names, once per origin (at most `limit` origins remembered; past that, once more per
/// origin after they are forgotten).
final class PushServiceWarnings: Sendable {
    let badJwt = OneTimeFlag()
    private let said = Mutex<Set<String>>([])
    static let limit = 4096

    /// True the first time `requirement` is named by `origin`.
    func first(_ requirement: PushServiceRequirement, origin: String) -> Bool {
        said.withLock { said in
            if said.count >= Self.limit { said.removeAll() }
            return said.insert(requirement.rawValue + " " + origin).inserted
        }
    }
}

/// A device outcome carried as an error, for `Result`.
struct OutcomeFailure: Error {
    let outcome: DeviceOutcome
    init(_ outcome: DeviceOutcome) { self.outcome = outcome }
}
