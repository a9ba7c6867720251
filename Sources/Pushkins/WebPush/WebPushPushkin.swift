import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// `type: webpush`: encrypted Web Push (RFC 8030, 8291, 8292) to each device's endpoint.
public final class WebPushPushkin: Pushkin {
    public let name: String
    public let kind = "webpush"
    public let config: WebPushConfig
    public var applicationServerKey: String { vapid.applicationServerKey }

    private let vapid: VAPIDSigner
    private let policy: EndpointPolicy
    private let client: UpstreamHTTPClient
    private let metrics: UpstreamMetrics

    public init(name: String, config: WebPushConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        self.vapid = VAPIDSigner(key: config.vapidKey, contactEmail: config.contactEmail)
        self.policy = EndpointPolicy(
            allowedEndpoints: config.allowedEndpoints, allowInsecure: config.allowInsecureEndpoints,
            allowPrivate: config.allowPrivateEndpoints)
        self.client = try UpstreamHTTPClient(settings: config.upstream)
        self.metrics = UpstreamMetrics(kind: "webpush", pushkin: name, factory: environment.metrics)
    }

    public func shutdown() async { await client.shutdown() }

    public func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceOutcome {
        guard let data = device.data else { return .rejected(reason: "device has no data") }
        if data["events_only"] == .bool(true), notification.eventId?.isEmpty ?? true {
            return .skipped(reason: "events_only and no event_id")
        }
        guard !device.pushkey.isEmpty, let endpointURL = data["endpoint"]?.stringValue, let auth = data["auth"]?.stringValue else {
            return .rejected(reason: "subscription needs a pushkey, data.endpoint and data.auth")
        }
        guard let p256dh = Base64URL.decode(device.pushkey), p256dh.count == 65, let authSecret = Base64URL.decode(auth),
            authSecret.count == 16
        else {
            return .rejected(reason: "pushkey is not a P-256 public key or auth is not 16 bytes")
        }
        let endpoint: EndpointPolicy.Endpoint
        switch await policy.check(endpointURL) {
        case .allowed(let allowed): endpoint = allowed
        case .malformed(let reason): return .rejected(reason: reason)
        case .refused(let reason):
            context.logger.warning(
                "Web Push endpoint refused", metadata: ["reason": "\(reason)", "pushkey": "\(Redaction.pushkey(device.pushkey))"])
            return .skipped(reason: reason)
        }

        let defaultPayload = data["default_payload"]?.objectValue
        guard let plaintext = WebPushPayload.encode(WebPushPayload.build(notification, defaultPayload: defaultPayload)) else {
            return .dropped(reason: "payload cannot be made to fit in a push message")
        }
        let body: [UInt8]
        let authorization: String
        do {
            body = try WebPushEncryption.encrypt(plaintext, p256dh: p256dh, authSecret: authSecret)
            authorization = try vapid.authorization(origin: endpoint.origin)
        } catch {
            return .rejected(reason: "cannot encrypt for this subscription")
        }

        var headers = HTTPHeaders()
        headers.add(name: "User-Agent", value: "herald")
        headers.add(name: "Authorization", value: authorization)
        headers.add(name: "TTL", value: String(config.ttl))
        headers.add(name: "Urgency", value: notification.isLowPriority ? "low" : "normal")
        headers.add(name: "Content-Encoding", value: "aes128gcm")
        headers.add(name: "Content-Type", value: "application/octet-stream")
        if data["only_last_per_room"]?.isTruthy == true, let roomId = notification.roomId, !roomId.isEmpty {
            headers.add(name: "Topic", value: Self.topic(forRoom: roomId))
        }
        let buffer = ByteBuffer(bytes: body)
        let result = await Retrying.run(policy: config.retry) { attempt -> Retrying.Step<DeviceOutcome> in
            await self.attempt(url: endpoint.url, headers: headers, body: buffer, pushkey: device.pushkey, context: context)
        }
        switch result {
        case .success(let outcome): return outcome
        case .failure(let exhausted): return .failed(reason: "push service: \(exhausted.reason)")
        }
    }

    private func attempt(url: String, headers: HTTPHeaders, body: ByteBuffer, pushkey: String, context: DispatchContext) async
        -> Retrying.Step<DeviceOutcome>
    {
        let response: UpstreamResponse
        do {
            response = try await metrics.measure({ try await client.send(url: url, headers: headers, body: body) }, status: \.status)
        } catch {
            context.logger.warning("Web Push request failed", metadata: ["error": "\(error)", "pushkey": "\(Redaction.pushkey(pushkey))"])
            return .retry(reason: "network error: \(error)", after: nil)
        }
        switch response.status {
        case 200..<300:
            return .done(.delivered)
        case 404, 410:
            return .done(.rejected(reason: "push service answered \(response.status)"))
        case 429, 500..<600:
            return .retry(
                reason: "push service answered \(response.status)", after: RetryAfter.parse(response.headers.first(name: "Retry-After")))
        default:
            context.logger.warning(
                "Web Push message refused",
                metadata: [
                    "status": "\(response.status)", "body": "\(response.bodyText.prefix(200))", "pushkey": "\(Redaction.pushkey(pushkey))",
                ])
            return .done(.dropped(reason: "push service answered \(response.status)"))
        }
    }

    /// A `Topic` (RFC 8030 §5.4): at most 32 base64url characters, derived from the room.
    public static func topic(forRoom roomId: String) -> String {
        Base64URL.encode(SHA256.hash(data: Data(roomId.utf8)).prefix(24))
    }
}
