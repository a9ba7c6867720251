package import HeraldCore
import HeraldUpstream
import NIOCore
import NIOHTTP1

/// `type: unifiedpush`: the Matrix → UnifiedPush gateway. The device's pushkey is its UnifiedPush
/// endpoint URL; the notification is POSTed to it as `{"notification": {…}}` without the
/// `devices` list (other devices' pushkeys never leave Herald), as UnifiedPush's Matrix gateway
/// does (docs/compatibility/unifiedpush.md).
package final class UnifiedPushPushkin: Pushkin {
    package let name: String
    package let type = PushkinType.unifiedPush
    package let config: UnifiedPushConfig
    private let pushService: PushServiceClient

    package init(name: String, config: UnifiedPushConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        self.pushService = try PushServiceClient(
            pushkin: name, type: .unifiedPush, allowedEndpoints: config.allowedEndpoints,
            allowInsecure: config.allowInsecureEndpoints, allowPrivate: config.allowPrivateEndpoints, upstream: config.upstream,
            retry: config.retry, environment: environment)
    }

    package func shutdown() async { await pushService.shutdown() }

    package func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceOutcome {
        let endpoint: EndpointPolicy.Endpoint
        switch await pushService.admit(device.pushkey, pushkey: device.pushkey, context: context) {
        case .success(let admitted): endpoint = admitted
        case .failure(let failure): return failure.outcome
        }
        guard let body = UnifiedPushPayload.encode(notification, limit: config.maxMessageBytes) else {
            return .dropped(reason: .payloadTooLarge)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        let request = UpstreamRequest(url: endpoint.url, headers: headers, body: ByteBuffer(bytes: body))
        return await pushService.deliver(request, to: endpoint, pushkey: device.pushkey, context: context)
    }
}

extension PushkinType {
    /// `type: unifiedpush` in `apps:`.
    package static let unifiedPush = PushkinType("unifiedpush")
}
