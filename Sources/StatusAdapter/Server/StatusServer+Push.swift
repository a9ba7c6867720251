import DeliveryRecord
import Foundation
import HeraldCore
import Logging
import Pushkins
import SwiftProtobuf

/// Push request (20 → 21): each item matched to its registration, sent once, and answered with a
/// report per item (docs/status-protocol.md).
extension StatusServer {
    /// Answers a duplicate with the cached response, and lets concurrent duplicates share one dispatch.
    func pushOnce(_ request: PushRequest, messageId: [UInt8]) async -> Result<[UInt8], StatusRequestError> {
        if let cached = try? await responses.response(to: messageId, now: clock.date) {
            counters.increment(MetricName.statusPushRequests, [("result", "replayed")])
            return .success(cached)
        }
        // The first request does the work in its own task; duplicates wait for its result.
        let (gate, owner) = inFlight.withLock { running -> (ReadinessGate<Result<[UInt8], StatusRequestError>>, Bool) in
            if let existing = running[messageId] { return (existing, false) }
            let gate = ReadinessGate<Result<[UInt8], StatusRequestError>>()
            running[messageId] = gate
            return (gate, true)
        }
        guard owner else {
            do {
                return try await gate.wait()
            } catch {
                return .failure(.dispatchUnavailable("the request was cancelled"))
            }
        }
        let result = await push(request, messageId: messageId)
        gate.open(result)
        _ = inFlight.withLock { $0.removeValue(forKey: messageId) }
        return result
    }

    /// One push request: its items matched, the matched ones sent, and the answer signed (and
    /// cached for its duplicates). Every item sent failing for now is a 5xx, so that status-go
    /// sends again.
    func push(_ request: PushRequest, messageId: [UInt8]) async -> Result<[UInt8], StatusRequestError> {
        var (reports, queued) = await matched(request)
        let logger = self.logger
        // Traced under the request's message id, as status-go names it (`herald trace --event-id
        // 0x…`), each item under its device token.
        let traceId = Hex.encode(request.messageID, prefix: "0x")
        let outcomes = await dispatcher.deliver(queued, logger: logger) { entry in
            let start = TraceStart(eventId: traceId, frontEnd: "status", appId: "", pushkey: entry.registration.deviceToken)
            return await self.dispatcher.traced(start) {
                await self.deliver(entry.item, registration: entry.registration, logger: logger)
            }
        }
        let transientFailures = await settle(outcomes, of: queued, in: &reports)
        if !queued.isEmpty && transientFailures == queued.count {
            counters.increment(MetricName.statusPushRequests, [("result", "unavailable")])
            return .failure(.dispatchUnavailable("every push upstream failed"))
        }
        var response = PushResponse()
        response.messageID = request.messageID
        response.reports = reports
        return await signedAnswer(response, to: messageId)
    }

    /// A notification to send: where its report is, and the registration it goes to.
    struct Queued: Sendable {
        var report: Int
        var item: PushItem
        var row: StoredRegistration
        var registration: Registration
    }

    /// Each item's report (not registered, wrong token, or success so far), and the items to send:
    /// those registered with the right token that the registration's filters allow.
    func matched(_ request: PushRequest) async -> (reports: [PushReport], queued: [Queued]) {
        var reports: [PushReport] = []
        var queued: [Queued] = []
        for item in request.requests {
            var report = PushReport()
            report.publicKey = item.publicKey
            report.installationID = item.installationID
            let row: StoredRegistration?
            do {
                row = try await store.registration(publicKey: [UInt8](item.publicKey), installationId: item.installationID)
            } catch {
                report.error = .unknownErrorType
                reports.append(report)
                continue
            }
            if item.type == .unknownPushNotificationType { continue }
            guard let row, let blob = row.registration, let registration = try? Registration(serializedBytes: blob) else {
                report.error = .notRegistered
                reports.append(report)
                continue
            }
            guard registration.accessToken == item.accessToken else {
                report.error = .wrongToken
                reports.append(report)
                continue
            }
            report.success = true
            reports.append(report)
            if Self.allows(item, registration) {
                queued.append(Queued(report: reports.count - 1, item: item, row: row, registration: registration))
            }
        }
        return (reports, queued)
    }

    /// Writes each sent item's outcome into its report: a dead token is NOT_REGISTERED and its
    /// registration dropped; any other failure is INTERNAL_ERROR. Returns how many failed for now.
    func settle(_ outcomes: [DeviceOutcome], of queued: [Queued], in reports: inout [PushReport]) async -> Int {
        var transientFailures = 0
        for (entry, outcome) in zip(queued, outcomes) {
            switch outcome {
            case .delivered, .skipped:
                break
            case .rejected(let reason) where outcome.tokenShouldBeDropped:
                reports[entry.report].success = false
                reports[entry.report].error = .notRegistered
                try? await store.dropRegistration(
                    publicKey: entry.row.publicKey, installationId: entry.row.installationId, version: entry.row.version)
                logger.info("Status device token rejected; registration dropped", metadata: ["reason": "\(reason)"])
            case .failed, .dropped, .rejected:
                // A rejection that is not the token's (the app's, not the device's) keeps the
                // registration.
                reports[entry.report].success = false
                reports[entry.report].error = .internalError
                if case .failed = outcome { transientFailures += 1 }
            }
        }
        return transientFailures
    }

    /// The signed answer, remembered for the request's duplicates.
    func signedAnswer(_ response: PushResponse, to messageId: [UInt8]) async -> Result<[UInt8], StatusRequestError> {
        do {
            let bytes = try StatusEnvelope.wrap(response, type: .pushNotificationResponse, key: identity)
            if config.responseCacheLimit > 0 {
                // Remembered before the request leaves `inFlight`: a duplicate finds one or the other.
                await responses.remember(messageId, response: bytes, expires: clock.date.addingTimeInterval(config.responseCacheLifetime))
            }
            counters.increment(MetricName.statusPushRequests, [("result", "answered")])
            return .success(bytes)
        } catch {
            return .failure(.internalError("cannot sign the response"))
        }
    }

    func deliver(_ item: PushItem, registration: Registration, logger: Logger) async -> Dispatcher.Delivery {
        let platform: StatusPlatform
        switch registration.tokenType {
        case .apnToken: platform = .ios
        case .firebaseToken: platform = .android
        default:
            return Dispatcher.Delivery(
                .dropped(reason: .noPushkin("token type \(registration.tokenType.rawValue) cannot be delivered")), pushkin: nil,
                token: registration.deviceToken)
        }
        var context = DispatchContext(logger: logger)
        context.logger[metadataKey: "installation"] = "\(registration.installationID)"
        let notification = Self.notification(for: item, platform: platform, topic: registration.apnTopic)
        let result = await delivery.send(notification, platform: platform, token: registration.deviceToken, context: context)
        return Dispatcher.Delivery(result, pushkin: delivery.pushkinName(platform), token: registration.deviceToken)
    }
}
