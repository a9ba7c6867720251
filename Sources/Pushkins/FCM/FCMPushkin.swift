import FoundationEssentials
package import HeraldCore
package import HeraldUpstream
import NIOCore
import NIOHTTP1

/// `type: gcm`: Firebase Cloud Messaging, HTTP v1 (default, one request per device) or the legacy
/// API (batched, in `FCMLegacySender`). docs/compatibility/fcm.md says what is sent and why.
package final class FCMPushkin: FCMSending {
    package let name: String
    package let type = PushkinType.gcm
    package let config: FCMConfig
    /// Google's token endpoint and the messages' connections.
    private let provider: HTTPProvider
    private var upstream: UpstreamCall { provider.upstream }
    private let tokens: OAuthAccessTokens?
    private let legacy: FCMLegacySender?
    /// v1's `messages:send` target on `base_url`'s origin, made once (a request carries it as its
    /// path, so no URL is taken apart per request).
    private let v1Path: String
    private let bearer = BearerField()

    package init(name: String, config: FCMConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        let provider = try HTTPProvider(
            type: .gcm, name: name, baseURL: config.baseURL, settings: config.upstream, retry: config.retry, environment: environment,
            providerId: "name")
        self.provider = provider
        switch config.credentials {
        case .v1(let project, let account):
            let clock = environment.clock
            // The JWT bearer grant (RFC 7523) with the service account's assertion.
            tokens = OAuthAccessTokens(
                tokenURL: account.tokenURI, client: provider.client, clock: environment.clock,
                whatToCheck:
                    "service_account_file: that the service account (\(account.clientEmail)) has the Firebase Cloud Messaging API enabled in project \(project), that its key was not deleted, and the clock of this host"
            ) {
                "grant_type=" + "urn:ietf:params:oauth:grant-type:jwt-bearer".formEncoded + "&assertion="
                    + (try account.assertion(now: clock.date)).formEncoded
            }
            legacy = nil
            v1Path = try UpstreamOrigin(config.baseURL).path(of: "\(config.baseURL)/v1/projects/\(project)/messages:send")
        case .legacy(let apiKey):
            tokens = nil
            v1Path = ""
            legacy = FCMLegacySender(url: "\(config.baseURL)/fcm/send", apiKey: apiKey, upstream: provider.upstream)
        }
    }

    package func shutdown() async { await provider.shutdown() }

    package func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
        guard case .v1 = config.credentials, let tokens else {
            return await dispatch(notification, devices: [device], context: context)[0]
        }
        let data: JSONObject
        switch FCMData.build(notification, device: device, version: .v1, sendBadgeCounts: config.sendBadgeCounts) {
        case .invalidDefaultPayload: return DeviceResult(.rejected(reason: .invalidDefaultPayload))
        case .nothingToSend: return DeviceResult(.skipped(reason: .nothingToSend))
        case .send(let built): data = built
        }
        let target = FCMTarget(device.pushkey, rule: config.target)
        let body = FCMMessage.v1(
            data: data, target: target, notification: notification, options: config.fcmOptions, visible: config.visibleNotification,
            badgePriority: config.badgePriority)
        return await sendV1(body: body, tokens: tokens, target: target, context: context)
    }

    /// Legacy: devices batched by identical data, at most 1000 a request. v1: one request each.
    package func dispatch(_ notification: PushNotification, devices: [Device], context: DispatchContext) async -> [DeviceResult] {
        guard let legacy else { return await dispatchEach(notification, devices: devices, context: context) }
        return await legacy.dispatch(notification, devices: devices, config: config, context: context)
    }

    /// Sends a message built elsewhere (the Status adapter's, as gorush builds it): the app's
    /// `fcm_options`, then the message's fields over them. The legacy API takes its
    /// `notification` and `data`.
    package func send(_ raw: FCMRawMessage, context: DispatchContext) async -> DeviceResult {
        guard !raw.token.isEmpty else { return DeviceResult(.rejected(reason: .invalidPushkey("empty registration token"))) }
        switch config.credentials {
        case .v1:
            guard let tokens else { return DeviceResult(.failed(reason: .authorization("no OAuth tokens"))) }
            let target = FCMTarget(raw.token, rule: config.target)
            var message = config.fcmOptions
            for (key, value) in raw.message { message[key] = value }
            message.removeValue(forKey: target.otherMember)
            message[target.member] = .string(target.value)
            return await sendV1(
                body: JSONWriter.buffer(["message": .object(message)]), tokens: tokens, target: target, context: context)
        case .legacy:
            guard let legacy else { return DeviceResult(.failed(reason: .authorization("no API key"))) }
            var body = config.fcmOptions
            if let notification = raw.message["notification"] { body["notification"] = notification }
            body["data"] = raw.message["data"] ?? .object([:])
            body["to"] = .string(raw.token)
            let message = JSONValue.object(body)
            return await legacy.send(pushkeys: [raw.token], context: context) { _ in message }.first
                ?? DeviceResult(.notDispatched)
        }
    }

    /// One v1 message through the one upstream-call path: `UpstreamCall` asks for the OAuth token
    /// (fetched or reused) per attempt and replaces it once when FCM answers 401; the error body
    /// decides the outcome. Its trace note names the form the device was addressed by.
    private func sendV1(body buffer: ByteBuffer, tokens: OAuthAccessTokens, target: FCMTarget, context: DispatchContext) async
        -> DeviceResult
    {
        let pushkey = target.value
        context.logger.debug(
            "FCM v1 message", metadata: ["target": "\(target.member)", "pushkey": "\(Redaction.pushkey(pushkey))"])
        let (url, path, bearer) = (config.baseURL, v1Path, bearer)
        var result = await upstream.deliver(logger: context.logger, credential: tokens) { _, accessToken throws(UpstreamPreparationError) in
            var headers = HTTPHeaders()
            headers.reserveCapacity(2)
            if let accessToken { headers.add(name: "Authorization", value: bearer.value(for: accessToken)) }
            headers.add(name: "Content-Type", value: "application/json")
            return UpstreamRequest(url: url, path: path, headers: headers, body: buffer)
        } classify: { response in
            let error = FCMErrorBody(response)
            return FCMDisposition.of(status: response.status, error: error).verdict(.fcm(status: response.status, error.code)) {
                context.logger.error(
                    "FCM refused the message",
                    metadata: [
                        "status": "\(response.status)", "error": "\(error.message ?? "")", "pushkey": "\(Redaction.pushkey(pushkey))",
                        "target": "\(target.member)",
                    ])
            }
        }
        result.note.target = target.member
        return result
    }
}

extension PushkinType {
    /// `type: gcm` in `apps:`.
    package static let gcm = PushkinType("gcm")
}
