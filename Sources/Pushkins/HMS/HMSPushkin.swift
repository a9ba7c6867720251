import FoundationEssentials
package import HeraldCore
package import HeraldUpstream
import NIOCore
import NIOHTTP1

/// A message for Push Kit built outside the notify path (Status, gorush platform 3): a visible
/// notification's title and body, and a map of strings for the app.
package struct HMSRawMessage: Sendable {
    package var title: String?
    package var body: String
    package var data: JSONObject
    package var token: String
    /// Android: `message.android` as the sender built it (gorush's), over the app's
    /// `android_options`; nil for Herald's own (`urgency: HIGH`, a visible notification).
    package var android: JSONObject?
    /// Android: `message.data` as given (gorush's `huawei_data`) instead of the map as JSON text.
    package var dataText: String?

    package init(title: String?, body: String, data: JSONObject, token: String, android: JSONObject? = nil, dataText: String? = nil) {
        self.title = title
        self.body = body
        self.data = data
        self.token = token
        self.android = android
        self.dataText = dataText
    }
}

/// A pushkin that sends ready-made Push Kit messages (what Status and gorush use).
package protocol HMSSending: Pushkin {
    func send(_ message: HMSRawMessage, context: DispatchContext) async -> DeviceResult
}

/// `type: hms`: Huawei Push Kit, for Android phones with HMS Core (`api: android`) and for
/// HarmonyOS (`api: harmony`). The devices of one notify that share a message go in one request
/// of up to 1 000 tokens; Huawei's per-token answer decides each device. docs/compatibility/hms.md
/// says what is sent and how each answer is taken.
package final class HMSPushkin: HMSSending {
    package let name: String
    package let type = PushkinType.hms
    package let config: HMSConfig
    /// The OAuth token endpoint (Android) and the messages' connections.
    private let provider: HTTPProvider
    private var upstream: UpstreamCall { provider.upstream }
    private let credential: any UpstreamCredential
    private let url: String
    private let bearerField = BearerField()

    package init(name: String, config: HMSConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        let provider = try HTTPProvider(
            type: .hms, name: name, baseURL: config.baseURL, settings: config.upstream, retry: config.retry, environment: environment,
            providerId: "requestId")
        self.provider = provider
        switch config.credentials {
        case .android(let appId, let secret, let tokenURL):
            // The client-credentials grant; Huawei refuses more than 1 000 tokens in five minutes
            // per app, which reuse keeps far away.
            credential = OAuthAccessTokens(
                tokenURL: tokenURL, client: provider.client, clock: environment.clock,
                whatToCheck: "app_id (\(appId)) and app_secret_file: that they are the OAuth client of this app in AppGallery Connect"
            ) {
                "grant_type=client_credentials&client_id=\(appId.formEncoded)&client_secret=\(secret.formEncoded)"
            }
            url = "\(config.baseURL)/v1/\(appId)/messages:send"
        case .harmony(let projectId, let account):
            credential = HMSJWTCredential(account: account, clock: environment.clock)
            url = "\(config.baseURL)/v3/\(projectId)/messages:send"
        }
    }

    package func shutdown() async { await provider.shutdown() }

    package var startupDetails: [String: String] { ["api": config.api] }

    package func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
        await dispatch(notification, devices: [device], context: context)[0]
    }

    /// One request per distinct message, with every device that gets it (at most 1 000).
    package func dispatch(_ notification: PushNotification, devices: [Device], context: DispatchContext) async -> [DeviceResult] {
        var outcomes = [DeviceResult?](repeating: nil, count: devices.count)
        var ready: [(index: Int, message: Built)] = []
        for (index, device) in devices.enumerated() {
            switch build(notification, device: device) {
            case .failure(let outcome): outcomes[index] = DeviceResult(outcome)
            case .success(let built): ready.append((index, built))
            }
        }
        let chunks = requestBatches(ready, limit: HMSMessage.maxTokens)
        let results = await fanOut(chunks, notStarted: [(Int, DeviceResult)]()) { (chunk: (message: Built, indices: [Int])) in
            let tokens = chunk.indices.map { devices[$0].pushkey }
            return Array(zip(chunk.indices, await self.send(chunk.message, tokens: tokens, context: context)))
        }
        for (index, outcome) in results.joined() { outcomes[index] = outcome }
        return outcomes.map { $0 ?? DeviceResult(.notDispatched) }
    }

    /// Sends a message built elsewhere (Status, gorush): a visible notification with the data.
    package func send(_ raw: HMSRawMessage, context: DispatchContext) async -> DeviceResult {
        guard !raw.token.isEmpty else { return DeviceResult(.rejected(reason: .invalidPushkey("empty push token"))) }
        let data = FCMData.stringify(raw.data).data
        let built: Built
        switch config.credentials {
        case .android:
            if let android = raw.android {
                built = Built(
                    body: HMSMessage.android(
                        data: raw.dataText.map(JSONValue.string) ?? .string(JSONWriter.string(.object(data))),
                        android: config.androidOptions.merging(android) { $1 }, tokens: []),
                    pushType: nil)
                break
            }
            var visible: JSONObject = ["body": .string(raw.body)]
            if let title = raw.title, !title.isEmpty { visible["title"] = .string(title) }
            built = Built(
                body: HMSMessage.android(
                    data: data, highPriority: true, ttl: config.ttl, options: config.androidOptions, notification: visible, tokens: []),
                pushType: nil)
        case .harmony:
            let title = raw.title.flatMap { $0.isEmpty ? nil : $0 } ?? config.title
            built = Built(
                body: HMSMessage.harmony(
                    .alert, data: data, alert: (config.category, title, raw.body), badge: nil, room: nil, ttl: config.ttl, tokens: []),
                pushType: .alert)
        }
        return await send(built, tokens: [raw.token], context: context)[0]
    }

    // MARK: building

    /// A message ready for its tokens: the request's body with an empty token list, and its
    /// scenario. Devices whose messages are equal share a request.
    struct Built: Sendable, Equatable {
        let body: JSONValue
        let pushType: HMSConfig.PushType?
    }

    /// What a device gets: its message, or the outcome that needs no request.
    enum Prepared {
        case success(Built)
        case failure(DeviceOutcome)
    }

    private func build(_ notification: PushNotification, device: Device) -> Prepared {
        guard !device.pushkey.isEmpty else { return .failure(.rejected(reason: .invalidPushkey("empty push token"))) }
        let map: JSONObject
        switch FCMData.build(notification, device: device, version: .v1, sendBadgeCounts: config.sendBadgeCounts) {
        case .invalidDefaultPayload: return .failure(.rejected(reason: .invalidDefaultPayload))
        case .nothingToSend: return .failure(.skipped(reason: .nothingToSend))
        case .send(let built): map = FCMData.stringify(built).data
        }
        let built: Built
        switch config.credentials {
        case .android:
            built = Built(
                body: HMSMessage.android(
                    data: map, highPriority: config.badgePriority.isHigh(notification), ttl: config.ttl, options: config.androidOptions,
                    tokens: []),
                pushType: nil)
        case .harmony:
            let eventIdOnly = device.data?["format"]?.stringValue == "event_id_only"
            let type = eventIdOnly ? config.eventIdOnlyPushType : config.pushType
            built = Built(
                body: HMSMessage.harmony(
                    type, data: map, alert: (config.category, config.title, config.body),
                    badge: config.sendBadgeCounts ? notification.counts.unread : nil, room: notification.roomId, ttl: config.ttl, tokens: []
                ),
                pushType: type)
        }
        guard HMSMessage.countedBytes(built.body) <= HMSMessage.maxBodyBytes else {
            return .failure(.dropped(reason: .payloadTooLarge))
        }
        return .success(built)
    }

    // MARK: sending

    /// One request for `tokens` through the one upstream-call path; Huawei's answer decides each,
    /// and each device's trace note is the call's.
    private func send(_ built: Built, tokens: [String], context: DispatchContext) async -> [DeviceResult] {
        let body = JSONWriter.buffer(HMSMessage.withTokens(built.body, tokens))
        let url = self.url
        let name = self.name
        let bearerField = self.bearerField
        let (result, note): (Result<[DeviceOutcome], UpstreamCallFailure>, DeliveryNote) = await upstream.run(
            logger: context.logger, credential: credential
        ) {
            _, bearer throws(UpstreamPreparationError) in
            var headers = HTTPHeaders()
            if let bearer { headers.add(name: "Authorization", value: bearerField.value(for: bearer)) }
            headers.add(name: "Content-Type", value: "application/json; charset=UTF-8")
            if let pushType = built.pushType { headers.add(name: "push-type", value: pushType.header) }
            return UpstreamRequest(url: url, headers: headers, body: body)
        } classify: { response in
            let answer = HMSResponseBody.parse(Array(response.body.readableBytesView))
            let status = response.status
            let reason = OutcomeReason.hms(status: status, answer.code, nil)
            switch HMSDisposition.of(status: status, code: answer.code) {
            case .delivered:
                return .done(tokens.map { _ in .delivered })
            case .partial:
                return .done(tokens.map { Self.outcome($0, answer: answer, status: status, othersDelivered: true) })
            case .allTokensRefused:
                return .done(tokens.map { Self.outcome($0, answer: answer, status: status, othersDelivered: false) })
            case .renewCredential:
                return .renewCredential(reason)
            case .temporary:
                return .retry(reason)
            case .permanent, .configuration:
                context.logger.error(
                    "Huawei Push Kit refused the message",
                    metadata: [
                        "pushkin": "\(name)", "status": "\(status)", "code": "\(answer.rawCode ?? "")",
                        "request_id": "\(answer.requestId ?? "")", "tokens": "\(tokens.count)",
                    ])
                return .done(tokens.map { _ in .failed(reason: reason) })
            }
        }
        switch result {
        case .success(let outcomes): return outcomes.map { DeviceResult($0, note: note) }
        case .failure(let failure): return tokens.map { _ in DeviceResult(.failed(reason: failure.reason), note: note) }
        }
    }

    /// One token's outcome in an answer that lists refused tokens: a dead token is rejected; a
    /// token of another project (`noRight`) only when the same request delivered to others (the
    /// credentials are right, so the token is wrong), else it fails as the configuration's
    /// problem; a scenario or permission problem fails, never rejects.
    package static func outcome(_ token: String, answer: HMSResponseBody, status: Int, othersDelivered: Bool) -> DeviceOutcome {
        guard let why = answer.refused[token] else {
            // 80300007 without a list: every token of the request is invalid.
            return othersDelivered ? .delivered : .rejected(reason: .hms(status: status, answer.code, nil))
        }
        let reason = OutcomeReason.hms(status: status, answer.code, why)
        switch why {
        case .illegalToken, .tokenFormatError, .tokenPlatformNotSupport:
            return .rejected(reason: reason)
        case .noRight:
            return othersDelivered ? .rejected(reason: reason) : .failed(reason: reason)
        case .countryNotSupport, .differentImgVerifyPolicy, .notSupportPlayVoice, .noRightToSendThisLiveNotificationEvent:
            return .dropped(reason: reason)
        case .noPushTypeRight, .atomicUnableSendUnsubscribedMsg, .disableSendHuaweiMsgBecauseOfPenalty, .appinfoError:
            return .failed(reason: reason)
        }
    }
}

extension PushkinType {
    /// `type: hms` in `apps:`.
    package static let hms = PushkinType("hms")
}
