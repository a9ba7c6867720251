import HeraldCore
import HeraldUpstream
import Metrics
import NIOCore

/// How Web Push and UnifiedPush reach a device's endpoint: the app's `EndpointPolicy`, and
/// keep-alive connection pools per push-service origin (`OriginPools`) that connect only where the
/// policy allows. An endpoint whose addresses the policy checks is reached through pools that
/// resolve its host and classify every address before a connection is opened
/// (`UpstreamConnector`); one the operator allowed by name, or an app with
/// `allow_private_endpoints`, through pools that do not.
final class PushServiceClient: Sendable {
    let policy: EndpointPolicy
    /// The app's warnings said once ("403 BadJwtToken", a requirement per origin).
    let warnings = PushServiceWarnings()
    private let checked: UpstreamCall
    private let unchecked: UpstreamCall
    private let transports: [OriginPools]
    /// `herald_endpoint_refusals_total{pushkin}`: endpoints the policy or the address check refused.
    private let refusals: Counter

    init(
        pushkin name: String, type: PushkinType, allowedEndpoints: [String]?, allowInsecure: Bool, allowPrivate: Bool,
        upstream: UpstreamSettings, retry: RetryPolicy, environment: PushkinEnvironment
    ) throws {
        let policy = EndpointPolicy(
            allowedEndpoints: allowedEndpoints, allowInsecure: allowInsecure, allowPrivate: allowPrivate, proxy: upstream.proxy,
            resolver: environment.hostResolver)
        self.policy = policy
        let metrics = UpstreamMetrics(type: type, pushkin: name, factory: environment.metrics, clock: environment.clock)
        let checked = OriginPools(
            settings: upstream, addressGuard: environment.hostResolver, contexts: environment.tlsContexts, clock: environment.clock)
        let unchecked = OriginPools(
            settings: upstream, addressGuard: nil, contexts: environment.tlsContexts, clock: environment.clock)
        // A push service's pushback holds its origin for every subscription there; the message's
        // URL (RFC 8030 §5: `Location`) is its id in the delivery trace.
        let pushback = environment.holds.map {
            PushbackScope(holds: $0, origin: .requestURL, pushkin: name, originClass: PushServiceKind.of(origin:))
        }
        let location: @Sendable (UpstreamResponse) -> String? = { $0.headers.first(name: "location") }
        self.checked = UpstreamCall(
            transport: checked, policy: retry, metrics: metrics, clock: environment.clock, pushback: pushback, providerId: location)
        self.unchecked = UpstreamCall(
            transport: unchecked, policy: retry, metrics: metrics, clock: environment.clock, pushback: pushback, providerId: location)
        self.transports = [checked, unchecked]
        self.refusals = Counter(label: MetricName.endpointRefusals, dimensions: [("pushkin", name)], factory: environment.metrics)
    }

    func shutdown() async {
        for transport in transports { await transport.shutdown() }
    }

    /// The endpoint to POST to, or the outcome that ends the device here.
    func admit(_ url: String, pushkey: String, context: DispatchContext) async -> Result<EndpointPolicy.Endpoint, OutcomeFailure> {
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
            refused(reason, pushkey: pushkey, context: context)
            return .failure(OutcomeFailure(.skipped(reason: .endpointRefused(reason))))
        }
    }

    /// Sends `request` to an admitted endpoint, with the app's retries.
    func deliver(_ request: UpstreamRequest, to endpoint: EndpointPolicy.Endpoint, pushkey: String, context: DispatchContext) async
        -> DeviceResult
    {
        let upstream = endpoint.addressChecked ? checked : unchecked
        let result = await upstream.deliver(logger: context.logger) { _ in
            request
        } classify: { response in
            PushServiceVerdict.classify(response, pushkey: pushkey, origin: endpoint.origin, context: context, warnings: self.warnings)
        }
        if case .skipped(.endpointRefused(let reason)) = result.outcome { refused(reason, pushkey: pushkey, context: context) }
        return result
    }

    /// An endpoint the policy, or the check of a connection's peer, refused: counted and logged.
    private func refused(_ reason: String, pushkey: String, context: DispatchContext) {
        refusals.increment()
        context.logger.warning("Push endpoint refused", metadata: ["reason": "\(reason)", "pushkey": "\(Redaction.pushkey(pushkey))"])
    }
}
