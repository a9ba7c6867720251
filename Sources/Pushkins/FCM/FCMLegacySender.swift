import HeraldCore
import HeraldUpstream
import NIOCore
import NIOHTTP1

/// The legacy FCM API: devices whose data agree share a request of at most 1000 registration ids,
/// and the ids FCM could not take yet are retried within the app's budget.
struct FCMLegacySender: Sendable {
    static let batchSize = 1000
    let url: String
    let apiKey: String
    let upstream: UpstreamCall

    func dispatch(_ notification: PushNotification, devices: [Device], config: FCMConfig, context: DispatchContext) async
        -> [DeviceResult]
    {
        var outcomes = [DeviceResult?](repeating: nil, count: devices.count)
        // Devices whose default_payload differ get different data: batch those that agree.
        var ready: [(index: Int, message: JSONObject)] = []
        for (index, device) in devices.enumerated() {
            switch FCMData.build(notification, device: device, version: .legacy, sendBadgeCounts: config.sendBadgeCounts) {
            case .invalidDefaultPayload: outcomes[index] = DeviceResult(.rejected(reason: .invalidDefaultPayload))
            case .nothingToSend: outcomes[index] = DeviceResult(.skipped(reason: .nothingToSend))
            case .send(let data): ready.append((index, data))
            }
        }
        let options = config.fcmOptions
        let badgePriority = config.badgePriority
        let chunks = requestBatches(ready, limit: Self.batchSize)
        let results = await fanOut(chunks, notStarted: [(Int, DeviceResult)]()) { (chunk: (message: JSONObject, indices: [Int])) in
            let (data, indices) = chunk
            let keys = indices.map { devices[$0].pushkey }
            let chunkOutcomes = await self.send(pushkeys: keys, context: context) { pending in
                FCMMessage.legacy(data: data, tokens: pending, notification: notification, options: options, badgePriority: badgePriority)
            }
            return Array(zip(indices, chunkOutcomes))
        }
        for (index, outcome) in results.joined() { outcomes[index] = outcome }
        return outcomes.map { $0 ?? DeviceResult(.notDispatched) }
    }

    /// One legacy request for `pushkeys` (at most 1000), retrying the ones FCM could not take yet;
    /// each device's trace note is the call's.
    func send(pushkeys: [String], context: DispatchContext, body makeBody: @Sendable ([String]) -> JSONValue) async -> [DeviceResult] {
        var outcomes = [DeviceOutcome?](repeating: nil, count: pushkeys.count)
        var pending = Array(pushkeys.indices)
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "key=\(apiKey)")
        headers.add(name: "Content-Type", value: "application/json")

        let (result, note): (Result<Void, UpstreamCallFailure>, DeliveryNote) = await upstream.run(logger: context.logger) { _ in
            let body = makeBody(pending.map { pushkeys[$0] })
            return UpstreamRequest(url: url, headers: headers, body: JSONWriter.buffer(body))
        } classify: { response in
            func finish(_ outcome: DeviceOutcome) -> UpstreamVerdict<Void> {
                for i in pending { outcomes[i] = outcome }
                pending = []
                return .done(())
            }
            switch response.status {
            case 200..<300:
                guard let json = try? JSONParser.parse(response.body.readableBytesView), let results = json["results"]?.arrayValue else {
                    return finish(.failed(reason: .fcmLegacy(nil, status: response.status)))
                }
                var retry: [Int] = []
                var lastRetryReason = OutcomeReason.fcmLegacy(nil, status: response.status)
                for (position, i) in pending.enumerated() {
                    guard position < results.count, let text = results[position]["error"]?.stringValue else {
                        outcomes[i] = .delivered
                        continue
                    }
                    let error = FCMLegacyError(rawValue: text)
                    let reason = OutcomeReason.fcmLegacy(error, status: response.status)
                    switch error?.disposition ?? .retry {
                    case .deadToken: outcomes[i] = .rejected(reason: reason)
                    case .dropped: outcomes[i] = .dropped(reason: reason)
                    case .retry:
                        retry.append(i)
                        lastRetryReason = reason
                    }
                }
                pending = retry
                return retry.isEmpty ? .done(()) : .retry(lastRetryReason)
            case 404:
                // Google switched the legacy API off: its endpoint answers 404 to everything. Rejecting
                // would delete every pusher (Sygnal's rule); a failure keeps them for a fixed config.
                context.logger.error("FCM's legacy API answered 404: it is switched off upstream; move the app to api_version: v1")
                return finish(.failed(reason: .fcmLegacy(nil, status: 404)))
            case 429, 500..<600:
                return .retry(.fcmLegacy(nil, status: response.status))
            default:
                context.logger.error(
                    "FCM refused the request", metadata: ["status": "\(response.status)", "body": "\(response.bodyText.prefix(200))"])
                return finish(.failed(reason: .fcmLegacy(nil, status: response.status)))
            }
        }
        if case .failure(let failure) = result {
            for i in pending { outcomes[i] = .failed(reason: failure.reason) }
        }
        return outcomes.map { DeviceResult($0 ?? .notDispatched, note: note) }
    }
}
