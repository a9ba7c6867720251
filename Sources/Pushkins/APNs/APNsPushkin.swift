import Crypto
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1

/// `type: apns`: Apple Push Notification service over HTTP/2, with Sygnal's payloads.
public final class APNsPushkin: Pushkin {
    public let name: String
    public let kind = "apns"
    public let config: APNsConfig
    private let pool: APNsConnectionPool
    private let providerToken: APNsProviderToken?
    private let metrics: UpstreamMetrics

    /// (status, reason) pairs that mean the device token is dead.
    static let rejections: Set<String> = [
        "400 BadDeviceToken", "400 DeviceTokenNotForTopic", "400 TopicDisallowed", "410 Unregistered", "410 ExpiredToken",
    ]

    public init(name: String, config: APNsConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        self.pool = try APNsConnectionPool(config: config)
        self.metrics = UpstreamMetrics(kind: "apns", pushkin: name, factory: environment.metrics)
        switch config.auth {
        case .token(let key, let keyId, let teamId):
            providerToken = APNsProviderToken(key: key, keyId: keyId, teamId: teamId)
        case .certificate(_, let identity):
            providerToken = nil
            Gauge(label: "sygnal_client_cert_expiry", dimensions: [("pushkin", name)], factory: environment.metrics)
                .record(identity.notAfter.timeIntervalSince1970)
            let days = identity.notAfter.timeIntervalSinceNow / 86_400
            if days < 30 {
                environment.logger.warning("APNs certificate expires soon", metadata: ["days": "\(Int(days))"])
            }
        }
    }

    public func shutdown() async { await pool.shutdown() }

    public func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceOutcome {
        if let value = device.data?["default_payload"], value.objectValue == nil {
            return .rejected(reason: "default_payload is not an object")
        }
        guard let token = APNsDeviceToken.token(fromPushkey: device.pushkey, convertToHex: config.convertDeviceTokenToHex) else {
            return .rejected(reason: "pushkey is not a base64 device token")
        }
        let payload: JSONObject
        switch APNsPayload.build(notification, device: device, sendBadgeCounts: config.sendBadgeCounts) {
        case .nothingToSend: return .skipped(reason: "no alert and no badge")
        case .send(let built): payload = built
        }
        guard let body = APNsTruncation.fit(payload) else {
            return .dropped(reason: "payload cannot be made to fit in 4096 bytes")
        }

        var headers = HTTPHeaders()
        headers.add(name: "apns-topic", value: config.topic)
        headers.add(name: "apns-priority", value: notification.isLowPriority ? "5" : "10")
        if let pushType = config.pushType { headers.add(name: "apns-push-type", value: pushType) }
        let expiration = config.expiration == 0 ? 0 : Int(Date().timeIntervalSince1970) + config.expiration
        headers.add(name: "apns-expiration", value: String(expiration))
        if let eventId = notification.eventId, !eventId.isEmpty {
            headers.add(name: "apns-collapse-id", value: Self.collapseId(eventId))
        }
        headers.add(name: "apns-id", value: UUID().uuidString.lowercased())
        headers.add(name: "content-type", value: "application/json")

        return await deliver(token: token, headers: headers, body: body, pushkey: device.pushkey, context: context)
    }

    /// Sends an already built payload (the Status adapter's), with `topic` instead of the app's
    /// when given. No priority header is sent, as gorush sends none for status-go.
    public func sendRaw(payload: JSONObject, deviceToken: String, topic: String?, context: DispatchContext) async -> DeviceOutcome {
        guard !deviceToken.isEmpty, deviceToken.allSatisfy({ $0.isHexDigit }) else {
            return .rejected(reason: "device token is not hex")
        }
        guard let body = APNsTruncation.fit(payload) else { return .dropped(reason: "payload cannot be made to fit in 4096 bytes") }
        var headers = HTTPHeaders()
        headers.add(name: "apns-topic", value: topic ?? config.topic)
        if let pushType = config.pushType { headers.add(name: "apns-push-type", value: pushType) }
        headers.add(name: "apns-id", value: UUID().uuidString.lowercased())
        headers.add(name: "content-type", value: "application/json")
        return await deliver(token: deviceToken.lowercased(), headers: headers, body: body, pushkey: deviceToken, context: context)
    }

    /// One notification to one device: bounded retries, token refresh, Apple's answer classified.
    private func deliver(token: String, headers: HTTPHeaders, body: [UInt8], pushkey: String, context: DispatchContext) async
        -> DeviceOutcome
    {
        let url = "\(config.baseURL)/3/device/\(token)"
        let buffer = ByteBuffer(bytes: body)
        var refreshedToken = false
        let result = await Retrying.run(policy: config.retry) { _ -> Retrying.Step<DeviceOutcome> in
            var attemptHeaders = headers
            if let providerToken {
                do {
                    attemptHeaders.add(name: "authorization", value: "bearer \(try providerToken.token())")
                } catch {
                    return .done(.failed(reason: "cannot sign the APNs provider token"))
                }
            }
            let response: UpstreamResponse
            do {
                response = try await metrics.measure(
                    { try await pool.withClient { try await $0.send(url: url, headers: attemptHeaders, body: buffer) } }, status: \.status)
            } catch {
                context.logger.warning("APNs request failed", metadata: ["error": "\(error)"])
                return .retry(reason: "APNs connection: \(error)", after: nil)
            }
            let reason = (try? JSONParser.parse(response.body.readableBytesView))?["reason"]?.stringValue ?? ""
            switch response.status {
            case 200:
                return .done(.delivered)
            case _ where Self.rejections.contains("\(response.status) \(reason)"):
                return .done(.rejected(reason: "APNs \(response.status) \(reason)"))
            case 403 where reason == "ExpiredProviderToken" && !refreshedToken && providerToken != nil:
                refreshedToken = true
                let stale = attemptHeaders.first(name: "authorization").map { String($0.dropFirst("bearer ".count)) }
                _ = try? providerToken?.token(refreshingFrom: stale)
                return .retry(reason: "APNs 403 ExpiredProviderToken", after: .zero)
            case 429, 500..<600:
                return .retry(
                    reason: "APNs \(response.status) \(reason)", after: RetryAfter.parse(response.headers.first(name: "retry-after")))
            default:
                context.logger.error(
                    "APNs refused the notification",
                    metadata: ["status": "\(response.status)", "reason": "\(reason)", "pushkey": "\(Redaction.pushkey(pushkey))"])
                return .done(.failed(reason: "APNs \(response.status) \(reason)"))
            }
        }
        switch result {
        case .success(let outcome): return outcome
        case .failure(let exhausted): return .failed(reason: exhausted.reason)
        }
    }

    /// `apns-collapse-id` is at most 64 bytes: the event id, or a digest of a longer one.
    static func collapseId(_ eventId: String) -> String {
        if eventId.utf8.count <= 64 { return eventId }
        return Base64URL.encode(SHA256.hash(data: Data(eventId.utf8)))
    }
}
