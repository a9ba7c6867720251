package import HeraldCore
package import HeraldUpstream
import NIOCore
import NIOHTTP1

/// `type: unifiedpush`: the Matrix → UnifiedPush gateway. The device's pushkey is its UnifiedPush
/// endpoint URL; the notification is POSTed to it as `{"notification": {…}}` without the
/// `devices` list (other devices' pushkeys never leave Herald), as UnifiedPush's Matrix gateway
/// does, with the `TTL` and `Urgency` RFC 8030 asks of every sender. A pusher whose `data` holds
/// its subscription's keys (`p256dh` and `auth`, as UnifiedPush's connectors and a browser's
/// `PushSubscription` give them) gets that body encrypted (`aes128gcm`, RFC 8291) and signed with
/// the app's VAPID key, as UnifiedPush's spec (AND_3) and the distributors that are plain Web Push
/// services require (docs/compatibility/unifiedpush.md).
package final class UnifiedPushPushkin: Pushkin {
    package let name: String
    package let type = PushkinType.unifiedPush
    package let config: UnifiedPushConfig
    private let pushService: PushServiceClient
    private let vapid: VAPIDSigner?
    /// The VAPID signature's time (docs/architecture.md, "Time").
    private let clock: any HeraldClock

    package init(name: String, config: UnifiedPushConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        self.vapid = config.vapid.map { VAPIDSigner(key: $0.key, contactEmail: $0.contactEmail) }
        self.clock = environment.clock
        self.pushService = try PushServiceClient(
            pushkin: name, type: .unifiedPush, allowedEndpoints: config.allowedEndpoints,
            allowInsecure: config.allowInsecureEndpoints, allowPrivate: config.allowPrivateEndpoints, upstream: config.upstream,
            retry: config.retry, environment: environment)
    }

    package var applicationServerKey: String? { vapid?.applicationServerKey }
    package var startupDetails: [String: String] { vapid.map { ["application_server_key": $0.applicationServerKey] } ?? [:] }

    package func shutdown() async { await pushService.shutdown() }

    package func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
        let keys: EncryptedPush.Keys?
        switch Self.subscriptionKeys(device.data) {
        case .none: keys = nil
        case .keys(let given): keys = given
        case .invalid:
            return DeviceResult(.rejected(reason: .invalidPushkey("data.p256dh is not a P-256 public key or data.auth is not 16 bytes")))
        }
        let endpoint: EndpointPolicy.Endpoint
        switch await pushService.admit(device.pushkey, pushkey: device.pushkey, context: context) {
        case .success(let admitted): endpoint = admitted
        case .failure(let failure): return DeviceResult(failure.outcome)
        }
        let limit = keys == nil ? config.maxMessageBytes : config.maxMessageBytes - WebPushEncryption.overhead
        guard let body = UnifiedPushPayload.encode(notification, limit: limit) else {
            return DeviceResult(.dropped(reason: .payloadTooLarge))
        }
        let urgency = Self.urgency(notification)
        let request: UpstreamRequest
        if let keys {
            do {
                let message = try EncryptedPush(
                    body, for: keys, vapid: vapid, origin: endpoint.origin, now: clock.date, ttl: config.ttl, urgency: urgency)
                request = UpstreamRequest(url: endpoint.url, headers: message.headers, body: message.body)
            } catch {
                return DeviceResult(.rejected(reason: .invalidPushkey("cannot encrypt for this subscription")))
            }
        } else {
            var headers = HTTPHeaders()
            headers.reserveCapacity(3)
            headers.add(name: "TTL", value: String(config.ttl))
            headers.add(name: "Urgency", value: urgency.rawValue)
            headers.add(name: "Content-Type", value: "application/json")
            request = UpstreamRequest(url: endpoint.url, headers: headers, body: ByteBuffer(bytes: body))
        }
        return await pushService.deliver(request, to: endpoint, pushkey: device.pushkey, context: context)
    }

    /// What the pusher's `data` says of its subscription's keys: `p256dh` and `auth` beside the
    /// other members, or in `keys` as `PushSubscription.toJSON()` writes them.
    enum SubscriptionKeys {
        case none
        case keys(EncryptedPush.Keys)
        case invalid
    }

    static func subscriptionKeys(_ data: JSONObject?) -> SubscriptionKeys {
        guard let data else { return .none }
        let holder = data["keys"]?.objectValue ?? data
        let p256dh = holder["p256dh"]?.stringValue
        let auth = holder["auth"]?.stringValue
        if p256dh == nil && auth == nil { return .none }
        guard let p256dh, let auth, let keys = EncryptedPush.Keys(p256dh: p256dh, auth: auth) else { return .invalid }
        return .keys(keys)
    }

    /// `high` for a notify of `prio: high` (the Matrix default), `normal` for `prio: low`, and
    /// `low` for a notify with no event (a badge update), which may wait for the phone to wake.
    static func urgency(_ notification: PushNotification) -> EncryptedPush.Urgency {
        if notification.eventId?.isEmpty ?? true { return .low }
        return notification.isLowPriority ? .normal : .high
    }
}

extension PushkinType {
    /// `type: unifiedpush` in `apps:`.
    package static let unifiedPush = PushkinType("unifiedpush")
}
