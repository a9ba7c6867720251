import Crypto
import FoundationEssentials
package import HeraldCore
package import HeraldUpstream
import Metrics
import NIOCore
import NIOHTTP1
import NIOSSL

/// `type: apns`: Apple Push Notification service over HTTP/2, with Sygnal's payloads
/// (docs/compatibility/apns.md).
package final class APNsPushkin: APNsSending {
    package let name: String
    package let type = PushkinType.apns
    package let config: APNsConfig
    /// The connections to APNs and the one queue its requests wait in: a device holds one of its
    /// slots for its whole dispatch, so that the devices beyond the streams wait before their
    /// payloads are built (docs/architecture.md, "Admission").
    private let pool: HTTP2Pool
    private let providerToken: APNsProviderToken?
    private let upstream: UpstreamCall
    let environment: PushkinEnvironment
    /// The request target before the device token: `/3/device/` after `base_url`'s own path.
    private let devicePath: String
    /// Apple's headers that change with every push (`UpstreamRequest.changingHeaders`).
    static let changingHeaders: Set<String> = ["apns-id", "apns-expiration", "apns-collapse-id"]

    package init(name: String, config: APNsConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        self.environment = environment
        var tls = TLSConfiguration.makeClientConfiguration()
        if case .certificate(let path, _) = config.auth {
            tls.certificateChain = try NIOSSLCertificate.fromPEMFile(path).map { .certificate($0) }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: path, format: .pem))
        }
        // The wait for a slot is Sygnal's `sygnal_apns_queue_time`, the requests waiting
        // `sygnal_pending_apns_requests`.
        let waits = AdmissionMetrics(
            queueTime: Metrics.Timer(label: MetricName.apnsQueueTime, dimensions: [], factory: environment.metrics),
            pending: Gauge(label: MetricName.pendingAPNsRequests, dimensions: [], factory: environment.metrics))
        let pool = try HTTP2Pool(
            origin: config.baseURL, settings: config.upstream, connections: config.connections, tls: tls,
            contexts: environment.tlsContexts, clock: environment.clock, metrics: waits)
        self.pool = pool
        devicePath = try UpstreamOrigin(config.baseURL).path(of: config.baseURL + "/3/device/")
        self.upstream = UpstreamCall(
            transport: pool.admitted, policy: config.retry,
            metrics: UpstreamMetrics(type: .apns, pushkin: name, factory: environment.metrics, clock: environment.clock),
            clock: environment.clock,
            // APNs's development environment adds `apns-unique-id`, which Apple's Push
            // Notifications Console looks up in its delivery log: the trace keeps it where given.
            providerId: { $0.headers.first(name: "apns-unique-id") ?? $0.headers.first(name: "apns-id") })
        switch config.auth {
        case .token(let key, let keyId, let teamId):
            providerToken = APNsProviderToken(key: key, keyId: keyId, teamId: teamId, clock: environment.clock)
        case .certificate(_, let identity):
            providerToken = nil
            Gauge(label: MetricName.clientCertExpiry, dimensions: [("pushkin", name)], factory: environment.metrics)
                .record(identity.notAfter.timeIntervalSince1970)
            let days = identity.notAfter.timeIntervalSinceNow / 86_400
            if days < 30 {
                environment.logger.warning("APNs certificate expires soon", metadata: ["days": "\(Int(days))"])
            }
        }
    }

    package func shutdown() async { await pool.shutdown() }

    package var baseURL: String { config.baseURL }

    package func sibling(baseURL: String, name: String) throws -> any APNsSending {
        var config = self.config
        config.baseURL = baseURL
        return try APNsPushkin(name: name, config: config, environment: environment)
    }

    /// Each device holds a slot of the pool's queue for its whole dispatch: the devices beyond the
    /// connections' streams wait before their payloads are built (docs/architecture.md, "Admission").
    package func dispatch(_ notification: PushNotification, devices: [Device], context: DispatchContext) async -> [DeviceResult] {
        await dispatchEach(notification, devices: devices, context: context, admission: pool.admission)
    }

    /// One device, for `dispatchEach`, which holds a slot of the pool's queue for it.
    package func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
        switch request(notification, device: device) {
        case .answered(let outcome): return DeviceResult(outcome)
        case .send(let request): return await send(request, pushkey: device.pushkey, context: context)
        }
    }

    /// A step's result: an outcome found without sending, or what to send.
    private enum Step {
        case answered(DeviceOutcome)
        case send(APNsRequestParts)
    }

    /// The device's request (its message, then what the message's requests carry), or why it has
    /// none. The synchronous steps of a dispatch are kept out of line, so that what they use lives
    /// on the thread's stack while they run rather than in the frame every device's task takes
    /// from its allocator (docs/architecture.md, "Values on the notify path").
    @inline(never)
    private func request(_ notification: PushNotification, device: Device) -> Step {
        if let value = device.data?["default_payload"], value.objectValue == nil {
            return .answered(.rejected(reason: .invalidDefaultPayload))
        }
        guard let token = APNsDeviceToken.token(fromPushkey: device.pushkey, convertToHex: config.convertDeviceTokenToHex) else {
            return .answered(.rejected(reason: .invalidPushkey("pushkey is not a base64 device token")))
        }
        guard token.utf8.count <= APNsDeviceToken.maxHexLength else {
            return .answered(.rejected(reason: .invalidPushkey("device token is longer than any APNs token")))
        }
        guard let body = payload(notification, device: device) else { return .answered(.skipped(reason: .nothingToSend)) }
        let expiration = config.expiration == 0 ? 0 : Int(environment.clock.date.timeIntervalSince1970) + config.expiration
        return request(
            for: APNsMessage(
                body: body, deviceToken: token, priority: notification.isLowPriority ? 5 : 10, expiration: expiration,
                collapseId: notification.eventId.flatMap { $0.isEmpty ? nil : Self.collapseId($0) }))
    }

    /// The device's payload, nil when there is nothing to send. Written straight into the request's
    /// buffer when it can be (`APNsPayloadWriter`): not for a background app, whose payload is
    /// rewritten, nor past APNs' limit, where it is cut as Sygnal cuts it; else built as a tree.
    private func payload(_ notification: PushNotification, device: Device) -> APNsMessage.Body? {
        if config.pushType != APNsPushType.background {
            var buffer = ByteBufferAllocator().buffer(capacity: Self.payloadCapacity)
            switch APNsPayloadWriter.write(notification, device: device, sendBadgeCounts: config.sendBadgeCounts, into: &buffer) {
            case .nothingToSend: return nil
            case .written where buffer.readableBytes <= APNsHosts.maxPayloadBytes: return .raw(buffer)
            case .written, .needsTree: break
            }
        }
        switch APNsPayload.build(notification, device: device, sendBadgeCounts: config.sendBadgeCounts) {
        case .nothingToSend: return nil
        case .send(let built): return .payload(built)
        }
    }

    /// Room for a whole alert's payload (about 400 bytes), reserved once.
    static let payloadCapacity = 1024

    /// Sends a message built elsewhere (the Status adapter's), holding a slot of the pool's queue:
    /// no priority header unless the message has one, as gorush sends none for status-go.
    package func send(_ message: APNsMessage, context: DispatchContext) async -> DeviceResult {
        guard !message.deviceToken.isEmpty, message.deviceToken.allSatisfy({ $0.isHexDigit }) else {
            return DeviceResult(.rejected(reason: .invalidPushkey("device token is not hex")))
        }
        guard message.deviceToken.utf8.count <= APNsDeviceToken.maxHexLength else {
            return DeviceResult(.rejected(reason: .invalidPushkey("device token is longer than any APNs token")))
        }
        var message = message
        message.deviceToken = message.deviceToken.lowercased()
        return await admitted(pool.admission, notStarted: Self.notAdmitted) { [message] in
            switch request(for: message) {
            case .answered(let outcome): return DeviceResult(outcome)
            case .send(let request): return await send(request, pushkey: message.deviceToken, context: context)
            }
        }
    }

    /// One request to one device through the one upstream-call path, Apple's answer classified;
    /// `UpstreamCall` renews the provider token once when Apple says it expired.
    private func send(_ request: APNsRequestParts, pushkey: String, context: DispatchContext) async -> DeviceResult {
        let url = config.baseURL
        return await upstream.deliver(logger: context.logger, credential: providerToken) {
            _, token throws(UpstreamPreparationError) in
            UpstreamRequest(
                url: url, path: request.path, headers: request.headers(authorization: token), body: request.body,
                changingHeaders: Self.changingHeaders)
        } classify: { response in
            let body = try? JSONParser.parse(response.body.readableBytesView)
            let reasonText = body?["reason"]?.stringValue
            let reason = reasonText.flatMap(APNsErrorReason.init(rawValue:))
            let since: Int64? = if response.status == 410, case .int(let ms)? = body?["timestamp"] { ms } else { nil }
            return APNsDisposition.of(status: response.status, reason: reason).verdict(
                .apns(status: response.status, reason, invalidSince: since)
            ) {
                context.logger.error(
                    "APNs refused the notification",
                    metadata: [
                        "status": "\(response.status)", "reason": "\(reasonText ?? "")", "pushkey": "\(Redaction.pushkey(pushkey))",
                    ])
            }
        }
    }

    /// What a message's requests carry, or its outcome when its payload is too large: the payload follows
    /// the push type, and every request names one (docs/compatibility/apns.md, "Push type and
    /// payload"): the message's, the app's, else the one its payload is. Synchronous and out of
    /// line, as `request(_:device:)`.
    @inline(never)
    private func request(for message: APNsMessage) -> Step {
        var message = message
        let pushType = message.pushType ?? config.pushType ?? APNsPushType.derived(from: message.body)
        if pushType == APNsPushType.background, case .payload(let payload) = message.body {
            message.body = .payload(APNsPushType.backgroundPayload(payload))
        }
        let buffer: ByteBuffer
        switch message.body {
        case .payload(let payload):
            guard let fitted = APNsTruncation.fit(payload) else { return .answered(.dropped(reason: .payloadTooLarge)) }
            buffer = ByteBuffer(bytes: fitted)
        case .raw(let bytes):
            guard bytes.readableBytes <= APNsHosts.maxPayloadBytes else { return .answered(.dropped(reason: .payloadTooLarge)) }
            buffer = bytes
        }
        // Apple's rules for the push type win over what the message asks (APNsPushType).
        let rule = APNsPushType.named(pushType)
        let topic = message.topic ?? config.topic
        let wanted = config.priority ?? message.priority
        return .send(
            APNsRequestParts(
                path: devicePath + message.deviceToken, body: buffer, topic: rule?.topic(topic) ?? topic,
                priority: rule.map { $0.priority(wanted) } ?? wanted, pushType: pushType,
                id: message.id ?? SecureRandom.uuid().lowercasedString, expiration: message.expiration,
                collapseId: message.collapseId))
    }

    /// `apns-collapse-id` is at most 64 bytes of visible ASCII: the value, or a digest of one that
    /// is longer or holds anything else (a control character would make the header invalid, a
    /// failure no retry can fix).
    package static func collapseId(_ value: String) -> String {
        if value.utf8.count <= APNsHosts.maxCollapseIdBytes, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) { return value }
        return Base64URL.encode(SHA256.hash(data: Data(value.utf8)))
    }
}

extension PushkinType {
    /// `type: apns` in `apps:`.
    package static let apns = PushkinType("apns")
}
