import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// `type: gcm`: Firebase Cloud Messaging, HTTP v1 (default) or the legacy API.
public final class FCMPushkin: Pushkin {
    public let name: String
    public let kind = "gcm"
    public let config: FCMConfig
    private let client: UpstreamHTTPClient
    private let tokens: GoogleAccessTokens?
    private let metrics: UpstreamMetrics

    /// Legacy per-result errors that mean the registration id is dead.
    static let legacyRejections: Set<String> = [
        "MissingRegistration", "InvalidRegistration", "NotRegistered", "InvalidPackageName", "MismatchSenderId",
    ]
    /// Legacy per-result errors that no retry can fix for this message.
    static let legacyPermanent: Set<String> = ["MessageTooBig", "InvalidDataKey", "InvalidTtl"]
    public static let legacyBatchSize = 1000

    public init(name: String, config: FCMConfig, environment: PushkinEnvironment) throws {
        self.name = name
        self.config = config
        self.client = try UpstreamHTTPClient(settings: config.upstream)
        self.metrics = UpstreamMetrics(kind: "gcm", pushkin: name, factory: environment.metrics)
        if case .v1(_, let account) = config.credentials {
            tokens = GoogleAccessTokens(account: account, client: client)
        } else {
            tokens = nil
        }
    }

    public func shutdown() async { await client.shutdown() }

    // MARK: HTTP v1, one request per device

    public func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceOutcome {
        guard case .v1(let project, _) = config.credentials, let tokens else {
            return await dispatch(notification, devices: [device], context: context)[0]
        }
        let data: JSONObject
        switch FCMData.build(notification, device: device, version: .v1, sendBadgeCounts: config.sendBadgeCounts) {
        case .invalidDefaultPayload: return .rejected(reason: "default_payload is not an object")
        case .nothingToSend: return .skipped(reason: "no room, event or counts")
        case .send(let built): data = built
        }
        let body = FCMMessage.v1(
            data: data, token: device.pushkey, notification: notification, options: config.fcmOptions, visible: config.visibleNotification)
        return await deliverV1(body: body, project: project, tokens: tokens, pushkey: device.pushkey, context: context)
    }

    /// Sends a notification built elsewhere (the Status adapter's): a visible `notification` and
    /// a string `data` map, as gorush builds it for status-go.
    public func sendRaw(notification: JSONObject, data: JSONObject, token: String, context: DispatchContext) async -> DeviceOutcome {
        guard !token.isEmpty else { return .rejected(reason: "empty registration token") }
        switch config.credentials {
        case .v1(let project, _):
            guard let tokens else { return .failed(reason: "no OAuth tokens") }
            var message = config.fcmOptions
            message["notification"] = .object(notification)
            message["data"] = .object(data)
            message["token"] = .string(token)
            return await deliverV1(body: ["message": .object(message)], project: project, tokens: tokens, pushkey: token, context: context)
        case .legacy(let apiKey):
            let outcomes = await sendLegacy(pushkeys: [token], apiKey: apiKey, context: context) { keys in
                var body = self.config.fcmOptions
                body["notification"] = .object(notification)
                body["data"] = .object(data)
                body["to"] = .string(keys.first ?? token)
                return .object(body)
            }
            return outcomes.first ?? .failed(reason: "not dispatched")
        }
    }

    private func deliverV1(body: JSONValue, project: String, tokens: GoogleAccessTokens, pushkey: String, context: DispatchContext) async
        -> DeviceOutcome
    {
        let buffer = ByteBuffer(bytes: JSONWriter.serialize(body))
        let url = "\(config.baseURL)/v1/projects/\(project)/messages:send"
        var refused: String?
        var refreshed = false

        let result = await Retrying.run(policy: config.retry) { _ -> Retrying.Step<DeviceOutcome> in
            let accessToken: String
            do {
                accessToken = try await tokens.token(replacing: refused)
            } catch {
                context.logger.warning("Cannot get an FCM access token", metadata: ["error": "\(error)"])
                return .retry(reason: "OAuth token: \(error)", after: nil)
            }
            var headers = HTTPHeaders()
            headers.add(name: "Authorization", value: "Bearer \(accessToken)")
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "User-Agent", value: "herald")
            let response: UpstreamResponse
            do {
                response = try await metrics.measure({ try await client.send(url: url, headers: headers, body: buffer) }, status: \.status)
            } catch {
                return .retry(reason: "FCM connection: \(error)", after: nil)
            }
            let error = FCMError(response)
            switch response.status {
            case 200..<300:
                return .done(.delivered)
            case 401 where !refreshed:
                refreshed = true
                refused = accessToken
                return .retry(reason: "FCM 401", after: .zero)
            case _ where error.meansDeadToken(status: response.status):
                return .done(.rejected(reason: "FCM \(response.status) \(error.code ?? "")"))
            case 429, 500..<600:
                return .retry(
                    reason: "FCM \(response.status) \(error.code ?? "")",
                    after: RetryAfter.parse(response.headers.first(name: "Retry-After")))
            default:
                context.logger.error(
                    "FCM refused the message",
                    metadata: [
                        "status": "\(response.status)", "error": "\(error.message ?? "")", "pushkey": "\(Redaction.pushkey(pushkey))",
                    ])
                return .done(.failed(reason: "FCM \(response.status) \(error.code ?? "")"))
            }
        }
        switch result {
        case .success(let outcome): return outcome
        case .failure(let exhausted): return .failed(reason: exhausted.reason)
        }
    }

    // MARK: legacy, batched

    public func dispatch(_ notification: PushNotification, devices: [Device], context: DispatchContext) async -> [DeviceOutcome] {
        guard case .legacy(let apiKey) = config.credentials else {
            return await dispatchEach(notification, devices: devices, context: context)
        }
        var outcomes = [DeviceOutcome?](repeating: nil, count: devices.count)
        // Devices whose default_payload differ get different data: batch those that agree.
        var batches: [(data: JSONObject, indices: [Int])] = []
        for (index, device) in devices.enumerated() {
            switch FCMData.build(notification, device: device, version: .legacy, sendBadgeCounts: config.sendBadgeCounts) {
            case .invalidDefaultPayload: outcomes[index] = .rejected(reason: "default_payload is not an object")
            case .nothingToSend: outcomes[index] = .skipped(reason: "no room, event or counts")
            case .send(let data):
                if let b = batches.firstIndex(where: { $0.data == data }) {
                    batches[b].indices.append(index)
                } else {
                    batches.append((data, [index]))
                }
            }
        }
        var chunks: [(JSONObject, [Int])] = []
        for batch in batches {
            for start in stride(from: 0, to: batch.indices.count, by: Self.legacyBatchSize) {
                chunks.append((batch.data, Array(batch.indices[start..<min(start + Self.legacyBatchSize, batch.indices.count)])))
            }
        }
        let results = await withTaskGroup(of: [(Int, DeviceOutcome)].self) { group in
            for (data, indices) in chunks {
                group.addTask {
                    let keys = indices.map { devices[$0].pushkey }
                    let chunkOutcomes = await self.sendLegacy(pushkeys: keys, apiKey: apiKey, context: context) { pending in
                        FCMMessage.legacy(data: data, tokens: pending, notification: notification, options: self.config.fcmOptions)
                    }
                    return Array(zip(indices, chunkOutcomes))
                }
            }
            var all: [(Int, DeviceOutcome)] = []
            for await part in group { all.append(contentsOf: part) }
            return all
        }
        for (index, outcome) in results { outcomes[index] = outcome }
        return outcomes.map { $0 ?? .failed(reason: "not dispatched") }
    }

    /// One legacy request for `pushkeys` (at most 1000), retrying the ones FCM could not take yet.
    private func sendLegacy(
        pushkeys: [String], apiKey: String, context: DispatchContext, body makeBody: @Sendable ([String]) -> JSONValue
    ) async -> [DeviceOutcome] {
        var outcomes = [DeviceOutcome?](repeating: nil, count: pushkeys.count)
        var pending = Array(pushkeys.indices)
        let url = "\(config.baseURL)/fcm/send"
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "key=\(apiKey)")
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "User-Agent", value: "herald")

        let result = await Retrying.run(policy: config.retry) { _ -> Retrying.Step<Void> in
            let body = makeBody(pending.map { pushkeys[$0] })
            let response: UpstreamResponse
            do {
                response = try await metrics.measure(
                    { try await client.send(url: url, headers: headers, body: ByteBuffer(bytes: JSONWriter.serialize(body))) },
                    status: \.status)
            } catch {
                return .retry(reason: "FCM connection: \(error)", after: nil)
            }
            func finish(_ outcome: DeviceOutcome) -> Retrying.Step<Void> {
                for i in pending { outcomes[i] = outcome }
                pending = []
                return .done(())
            }
            switch response.status {
            case 200..<300:
                guard let json = try? JSONParser.parse(response.body.readableBytesView), let results = json["results"]?.arrayValue else {
                    return finish(.failed(reason: "FCM answered \(response.status) without results"))
                }
                var retry: [Int] = []
                for (position, i) in pending.enumerated() {
                    guard position < results.count, let error = results[position]["error"]?.stringValue else {
                        outcomes[i] = .delivered
                        continue
                    }
                    if Self.legacyRejections.contains(error) {
                        outcomes[i] = .rejected(reason: "FCM \(error)")
                    } else if Self.legacyPermanent.contains(error) {
                        outcomes[i] = .dropped(reason: "FCM \(error)")
                    } else {
                        retry.append(i)
                    }
                }
                pending = retry
                return retry.isEmpty ? .done(()) : .retry(reason: "FCM per-device errors", after: nil)
            case 404:
                return finish(.rejected(reason: "FCM 404"))
            case 429, 500..<600:
                return .retry(reason: "FCM \(response.status)", after: RetryAfter.parse(response.headers.first(name: "Retry-After")))
            default:
                context.logger.error(
                    "FCM refused the request", metadata: ["status": "\(response.status)", "body": "\(response.bodyText.prefix(200))"])
                return finish(.failed(reason: "FCM \(response.status)"))
            }
        }
        if case .failure(let exhausted) = result {
            for i in pending { outcomes[i] = .failed(reason: exhausted.reason) }
        }
        return outcomes.map { $0 ?? .failed(reason: "not dispatched") }
    }
}

/// The error body of FCM HTTP v1: `{"error": {"code", "message", "status", "details": [...]}}`.
struct FCMError {
    var status: String?
    var message: String?
    /// `details[].errorCode` of the FcmError detail (UNREGISTERED, INVALID_ARGUMENT, QUOTA_EXCEEDED…).
    var code: String?
    var tokenFieldViolation = false

    init(_ response: UpstreamResponse) {
        guard response.status >= 400, let error = (try? JSONParser.parse(response.body.readableBytesView))?["error"] else { return }
        status = error["status"]?.stringValue
        message = error["message"]?.stringValue
        for detail in error["details"]?.arrayValue ?? [] {
            if let errorCode = detail["errorCode"]?.stringValue { code = errorCode }
            for violation in detail["fieldViolations"]?.arrayValue ?? [] where violation["field"]?.stringValue == "message.token" {
                tokenFieldViolation = true
            }
        }
        if code == nil { code = status }
    }

    /// UNREGISTERED, a 404, or an INVALID_ARGUMENT about the registration token.
    func meansDeadToken(status httpStatus: Int) -> Bool {
        if code == "UNREGISTERED" || httpStatus == 404 { return true }
        guard httpStatus == 400, code == "INVALID_ARGUMENT" || status == "INVALID_ARGUMENT" else { return false }
        return tokenFieldViolation || (message?.lowercased().contains("registration token") ?? false)
    }
}
