import Foundation
package import HeraldCore
package import Logging
package import Metrics
package import Pushkins
import SwiftProtobuf
import Synchronization

/// The Status push-notification server role (docs/status-protocol.md), over HTTP.
///
/// Registration (16 → 17), query (18 → 19) and push request (20 → 21) are handled as status-go
/// does, with Herald's decisions of docs/status-protocol.md: a re-sent registration is accepted, a
/// duplicate push request gets its cached response again, device tokens that APNs or FCM reject
/// come back as NOT_REGISTERED and their registration is dropped, and storage errors are
/// INTERNAL_ERROR.
package final class StatusServer: Sendable {
    package let identity: Secp256k1.PrivateKey
    package let config: StatusConfig
    let store: any StatusStore
    let delivery: any StatusSender
    let dispatcher: Dispatcher
    /// Expiries of cached answers are read from it (docs/architecture.md, "Time").
    let clock: any HeraldClock
    let logger: Logger
    let metrics: any MetricsFactory
    let counters: CounterCache
    /// Answered push requests, for their duplicates.
    let responses: ResponseCache
    private let inFlight = Mutex<[[UInt8]: ReadinessGate<Result<[UInt8], StatusRequestError>>]>([:])

    package init(
        identity: Secp256k1.PrivateKey, config: StatusConfig, store: any StatusStore, delivery: any StatusSender, logger: Logger,
        metrics: any MetricsFactory, dispatcher: Dispatcher? = nil, clock: any HeraldClock
    ) {
        self.clock = clock
        self.identity = identity
        self.config = config
        self.store = store
        self.delivery = delivery
        self.logger = logger
        self.metrics = metrics
        self.counters = CounterCache(factory: metrics)
        self.dispatcher = dispatcher ?? Dispatcher(pushkins: [], counters: counters)
        self.responses = ResponseCache(
            store: store, limit: config.responseCacheLimit, maxPending: config.responseCacheMaxPending, logger: logger, clock: clock)
    }

    /// Writes the answers of push requests to the store until graceful shutdown, then those left
    /// (`ResponseCache`). The Status service runs it while the server is up.
    package func runResponseCache() async { await responses.run() }

    package var publicKey: Secp256k1.PublicKey { identity.publicKey }

    /// Handles one raw ApplicationMetadataMessage; returns the signed response message.
    package func handle(_ bytes: [UInt8]) async -> Result<[UInt8], StatusRequestError> {
        let opened: StatusEnvelope.Opened
        do {
            opened = try StatusEnvelope.open(bytes)
        } catch {
            return .failure(error)
        }
        let messageId = StatusCrypto.messageId(signer: opened.signer, message: bytes)
        do {
            switch opened.type {
            case AMM.TypeEnum.pushNotificationRegistration.rawValue:
                let response = await register(payload: opened.payload, signer: opened.signer)
                return .success(try StatusEnvelope.wrap(response, type: .pushNotificationRegistrationResponse, key: identity))
            case AMM.TypeEnum.pushNotificationQuery.rawValue:
                guard let query = try? Query(serializedBytes: opened.payload) else {
                    return .failure(.malformedPayload("not a PushNotificationQuery"))
                }
                let response = await answer(query, messageId: messageId)
                return .success(try StatusEnvelope.wrap(response, type: .pushNotificationQueryResponse, key: identity))
            case AMM.TypeEnum.pushNotificationRequest.rawValue:
                guard let request = try? PushRequest(serializedBytes: opened.payload) else {
                    return .failure(.malformedPayload("not a PushNotificationRequest"))
                }
                guard !request.messageID.isEmpty else { return .failure(.missingMessageId) }
                return await pushOnce(request, messageId: messageId)
            default:
                return .failure(.unsupportedType(opened.type))
            }
        } catch {
            return .failure(.internalError("cannot sign the response"))
        }
    }

    // MARK: registration

    func register(payload: [UInt8], signer: Secp256k1.PublicKey) async -> RegistrationResponse {
        var response = RegistrationResponse()
        response.requestID = Data(Keccak.shake256(payload))
        switch await validateAndStore(payload: payload, signer: signer) {
        case nil: response.success = true
        case let error?: response.error = error
        }
        counters.increment(MetricName.statusRegistrations, [("result", response.success ? "ok" : "\(response.error)")])
        return response
    }

    /// nil on success, else the error to report.
    private func validateAndStore(payload: [UInt8], signer: Secp256k1.PublicKey) async -> RegistrationResponse.ErrorType? {
        guard !payload.isEmpty else { return .malformedMessage }
        guard let key = try? identity.sharedX(with: signer), let plain = try? StatusCrypto.open(payload, key: key) else {
            return .malformedMessage
        }
        guard let registration = try? Registration(serializedBytes: plain) else { return .malformedMessage }
        guard registration.version >= 1 else { return .versionMismatch }
        guard InstallationID.isValid(registration.installationID) else { return .malformedMessage }
        let hashedKey = StatusCrypto.hashPublicKey(signer)

        let previous: StoredRegistration?
        do {
            previous = try await store.registration(publicKey: hashedKey, installationId: registration.installationID)
        } catch {
            logger.error("Status store read failed", metadata: ["error": "\(error)"])
            return .internalError
        }
        if let previous, registration.version <= previous.version {
            // A client whose response was lost sends the same version again: the same content is a success.
            guard registration.version == previous.version else { return .versionMismatch }
            if registration.unregister { return previous.registration == nil ? nil : .versionMismatch }
            guard let stored = previous.registration, let storedRegistration = try? Registration(serializedBytes: stored),
                storedRegistration == registration
            else { return .versionMismatch }
            return nil
        }

        if !registration.unregister {
            guard InstallationID.isValid(registration.accessToken) else { return .malformedMessage }
            guard !registration.grant.isEmpty else { return .malformedMessage }
            guard
                StatusCrypto.verifyGrant(
                    [UInt8](registration.grant), client: signer, server: identity.publicKey, accessToken: registration.accessToken)
            else { return .malformedMessage }
            guard !registration.deviceToken.isEmpty else { return .malformedMessage }
            guard registration.tokenType != .unknownTokenType else { return .malformedMessage }
        }

        let row = StoredRegistration(
            publicKey: hashedKey, installationId: registration.installationID, version: registration.version,
            registration: registration.unregister ? nil : plain)
        do {
            // A concurrent writer with a newer version wins; this one is then out of date.
            return try await store.write(row) ? nil : .versionMismatch
        } catch {
            logger.error("Status store write failed", metadata: ["error": "\(error)"])
            return .internalError
        }
    }

    // MARK: query

    func answer(_ query: Query, messageId: [UInt8]) async -> QueryResponse {
        var response = QueryResponse()
        response.messageID = Data(messageId)
        guard !query.publicKeys.isEmpty else { return response }
        let keys = query.publicKeys.prefix(config.maxQueryKeys).map { [UInt8]($0) }
        let rows: [StoredRegistration]
        do {
            rows = try await store.registrations(publicKeys: keys)
        } catch {
            logger.error("Status store read failed", metadata: ["error": "\(error)"])
            return response
        }
        for row in rows {
            guard let blob = row.registration, let registration = try? Registration(serializedBytes: blob) else { continue }
            var info = QueryInfo()
            info.publicKey = Data(row.publicKey)
            info.grant = registration.grant
            info.version = registration.version
            info.installationID = registration.installationID
            if registration.allowFromContactsOnly {
                info.allowedKeyList = registration.allowedKeyList
            } else {
                info.accessToken = registration.accessToken
            }
            response.info.append(info)
        }
        response.success = true
        return response
    }

    // MARK: push requests

    /// Answers a duplicate with the cached response, and lets concurrent duplicates share one dispatch.
    private func pushOnce(_ request: PushRequest, messageId: [UInt8]) async -> Result<[UInt8], StatusRequestError> {
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

    private func push(_ request: PushRequest, messageId: [UInt8]) async -> Result<[UInt8], StatusRequestError> {
        var response = PushResponse()
        response.messageID = request.messageID
        var reports: [PushReport] = []
        /// A notification to send: where its report is, and the registration it goes to.
        struct Queued: Sendable {
            var report: Int
            var item: PushItem
            var row: StoredRegistration
            var registration: Registration
        }
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

        let logger = self.logger
        let outcomes = await dispatcher.deliver(queued, logger: logger) { entry in
            await self.deliver(entry.item, registration: entry.registration, logger: logger)
        }

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
                // A rejection that is not the token's (APNs `TopicDisallowed`: the app's topic) keeps
                // the registration.
                reports[entry.report].success = false
                reports[entry.report].error = .internalError
                if case .failed = outcome { transientFailures += 1 }
            }
        }
        if !queued.isEmpty && transientFailures == queued.count {
            counters.increment(MetricName.statusPushRequests, [("result", "unavailable")])
            return .failure(.dispatchUnavailable("every push upstream failed"))
        }
        response.reports = reports
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

    /// status-go's filters (docs/status-protocol.md): a filtered notification is reported as a success
    /// but not sent, so that blocking stays private.
    static func allows(_ item: PushItem, _ registration: Registration) -> Bool {
        let author = item.author
        let chat = item.chatID
        let blocked = registration.blockedChatList.contains(author)
        switch item.type {
        case .message:
            return !registration.blockedChatList.contains(chat) && !registration.mutedChatList.contains(chat) && !blocked
        case .mention:
            return !registration.blockMentions && registration.allowedMentionsChatList.contains(chat) && !blocked
        case .requestToJoinCommunity:
            return !blocked
        default:
            return true
        }
    }

    /// The text gorush shows for each type (docs/status-protocol.md).
    static func text(for type: PushItem.PushNotificationType) -> String {
        switch type {
        case .message: return "You have a new message"
        case .requestToJoinCommunity: return "Someone requested to join a community you are an admin of"
        default: return "Someone mentioned you"
        }
    }

    /// What status-go's push server posts to gorush for one device (docs/status-protocol.md, "What
    /// is sent"): the text, the encrypted message and its chat and key as `data`, and for an APNs
    /// token a visible, audible push the app may wake for (`content_available`, `sound: default`,
    /// `priority: high`, `push_type: alert`) with a `deepLink` to the chats or the activity centre.
    static func notification(for item: PushItem, platform: StatusPlatform, topic: String) -> GorushNotification {
        var notification = GorushNotification()
        notification.platform = platform.number
        notification.message = text(for: item.type)
        notification.data = [
            "encryptedMessage": .string("0x" + Hex.encode(item.message)), "chatId": .string("0x" + Hex.encode(item.chatID)),
            "publicKey": .string("0x" + Hex.encode(item.publicKey)),
        ]
        guard platform == .ios else { return notification }
        notification.topic = topic
        notification.contentAvailable = true
        notification.sound = "default"
        notification.priority = "high"
        notification.pushType = "alert"
        notification.data["deepLink"] = .string(item.type == .message ? "status-app://chats" : "status-app://ac")
        return notification
    }

    private func deliver(_ item: PushItem, registration: Registration, logger: Logger) async -> Dispatcher.Delivery {
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
        let outcome = await delivery.send(notification, platform: platform, token: registration.deviceToken, context: context)
        return Dispatcher.Delivery(outcome, pushkin: delivery.pushkinName(platform), token: registration.deviceToken)
    }
}
