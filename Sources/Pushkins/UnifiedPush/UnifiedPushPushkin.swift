import Logging
import Metrics
import NIOCore
import NIOHTTP1

/// `type: unifiedpush`: the Matrix → UnifiedPush gateway. The device's pushkey is its UnifiedPush
/// endpoint URL; the notification is POSTed to it as `{"notification": {…}}` without the
/// `devices` list (other devices' pushkeys never leave Herald), as UnifiedPush's Matrix gateway
/// does (docs/compatibility/unifiedpush.md).
public final class UnifiedPushPushkin: Pushkin {
    public let name: String
    public let type = "unifiedpush"
    public let config: UnifiedPushConfig
    private let policy: EndpointPolicy
    private let client: UpstreamHTTPClient
    private let upstream: UpstreamCall
    /// `herald_endpoint_refusals_total{pushkin}`: endpoints the policy refused.
    private let refusals: Counter

    public init(name: String, config: UnifiedPushConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        self.policy = EndpointPolicy(
            allowedEndpoints: config.allowedEndpoints, allowInsecure: config.allowInsecureEndpoints,
            allowPrivate: config.allowPrivateEndpoints)
        let client = try UpstreamHTTPClient(settings: config.upstream)
        self.client = client
        self.refusals = Counter(label: "herald_endpoint_refusals_total", dimensions: [("pushkin", name)], factory: environment.metrics)
        self.upstream = UpstreamCall(
            transport: client, policy: config.retry,
            metrics: UpstreamMetrics(type: "unifiedpush", pushkin: name, factory: environment.metrics))
    }

    public func shutdown() async { await client.shutdown() }

    public func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceOutcome {
        let endpoint: EndpointPolicy.Endpoint
        switch await PushServiceEndpoint.admit(
            device.pushkey, policy: policy, refusals: refusals, pushkey: device.pushkey, context: context)
        {
        case .success(let admitted): endpoint = admitted
        case .failure(let failure): return failure.outcome
        }
        guard let body = UnifiedPushPayload.encode(notification, limit: config.maxMessageBytes) else {
            return .dropped(reason: .payloadTooLarge)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        let request = UpstreamRequest(url: endpoint.url, headers: headers, body: ByteBuffer(bytes: body))
        return await upstream.deliver(logger: context.logger) { _ in
            request
        } classify: { response in
            PushServiceEndpoint.classify(response, pushkey: device.pushkey, context: context)
        }
    }
}
