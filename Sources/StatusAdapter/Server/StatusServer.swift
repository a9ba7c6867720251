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
    /// Push requests being answered, for their duplicates to wait on.
    let inFlight = Mutex<[[UInt8]: ReadinessGate<Result<[UInt8], StatusRequestError>>]>([:])

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
        self.dispatcher = dispatcher ?? Dispatcher(pushkins: [], counters: counters, clock: clock)
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

}
