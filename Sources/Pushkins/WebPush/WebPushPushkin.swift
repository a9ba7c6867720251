import Crypto
import FoundationEssentials
package import HeraldCore
package import HeraldUpstream
import NIOCore
import NIOHTTP1

/// `type: webpush`: encrypted Web Push (RFC 8030, 8291, 8292) to each device's endpoint.
package final class WebPushPushkin: Pushkin {
    package let name: String
    package let type = PushkinType.webPush
    package let config: WebPushConfig
    package var applicationServerKey: String { vapid.applicationServerKey }

    private let vapid: VAPIDSigner
    private let pushService: PushServiceClient
    /// The VAPID signature's time (docs/architecture.md, "Time").
    private let clock: any HeraldClock

    package init(name: String, config: WebPushConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        self.vapid = VAPIDSigner(key: config.vapidKey, contactEmail: config.contactEmail)
        clock = environment.clock
        self.pushService = try PushServiceClient(
            pushkin: name, type: .webPush, allowedEndpoints: config.allowedEndpoints, allowInsecure: config.allowInsecureEndpoints,
            allowPrivate: config.allowPrivateEndpoints, upstream: config.upstream, retry: config.retry, environment: environment)
    }

    package var startupDetails: [String: String] { ["application_server_key": applicationServerKey] }

    package func shutdown() async { await pushService.shutdown() }

    package func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
        guard let data = device.data else { return DeviceResult(.rejected(reason: .invalidPushkey("device has no data"))) }
        if data["events_only"] == .bool(true), notification.eventId?.isEmpty ?? true {
            return DeviceResult(.skipped(reason: .eventsOnly))
        }
        guard !device.pushkey.isEmpty, let endpointURL = data["endpoint"]?.stringValue, let auth = data["auth"]?.stringValue else {
            return DeviceResult(.rejected(reason: .invalidPushkey("subscription needs a pushkey, data.endpoint and data.auth")))
        }
        guard let keys = EncryptedPush.Keys(p256dh: device.pushkey, auth: auth) else {
            return DeviceResult(.rejected(reason: .invalidPushkey("pushkey is not a P-256 public key or auth is not 16 bytes")))
        }
        let endpoint: EndpointPolicy.Endpoint
        switch await pushService.admit(endpointURL, pushkey: device.pushkey, context: context) {
        case .success(let admitted): endpoint = admitted
        case .failure(let failure): return DeviceResult(failure.outcome)
        }

        let defaultPayload = data["default_payload"]?.objectValue
        var payload = WebPushPayload.build(notification, defaultPayload: defaultPayload)
        if let navigate = config.declarativeNavigate {
            // A push with nothing to show (a badge update: no event, no room) is not dressed as a
            // notification: WebKit would show it (docs/compatibility/webpush.md, "Declarative Web Push").
            if notification.eventId?.isEmpty ?? true, notification.roomId?.isEmpty ?? true {
                guard config.declarativeBadgeUpdates, let start = config.declarativeStartURL else {
                    return DeviceResult(.skipped(reason: .nothingToSend))
                }
                payload = WebPushPayload.declarativeBadge(payload, notification, title: config.declarativeTitle, startURL: start)
            } else {
                payload = WebPushPayload.declarative(payload, notification, navigate: navigate)
            }
        }
        guard let plaintext = WebPushPayload.encode(payload) else {
            return DeviceResult(.dropped(reason: .payloadTooLarge))
        }
        var topic: String?
        if data["only_last_per_room"]?.isTruthy == true, let roomId = notification.roomId, !roomId.isEmpty {
            topic = Self.topic(forRoom: roomId)
        }
        let message: EncryptedPush
        do {
            message = try EncryptedPush(
                plaintext, for: keys, vapid: vapid, origin: endpoint.origin, now: clock.date, ttl: config.ttl,
                urgency: notification.isLowPriority ? .low : .normal, topic: topic)
        } catch {
            return DeviceResult(.rejected(reason: .invalidPushkey("cannot encrypt for this subscription")))
        }
        let request = UpstreamRequest(url: endpoint.url, headers: message.headers, body: message.body)
        return await pushService.deliver(request, to: endpoint, pushkey: device.pushkey, context: context)
    }

    /// A `Topic` (RFC 8030 §5.4): at most 32 base64url characters, derived from the room.
    package static func topic(forRoom roomId: String) -> String {
        Base64URL.encode(SHA256.hash(data: Data(roomId.utf8)).prefix(24))
    }
}

extension PushkinType {
    /// `type: webpush` in `apps:`.
    package static let webPush = PushkinType("webpush")
}
