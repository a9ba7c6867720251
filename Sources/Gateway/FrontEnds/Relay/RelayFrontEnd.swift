import DeliveryRecord
import Foundation
import HeraldCore
import HeraldHTTPServer
import Logging
import NIOCore
import Pushkins

/// The Web Push → APNs relay, a drop-in for toot-relay (docs/webpush-relay.md): an iOS app
/// subscribes with `https://<herald>/relay-to/<environment>/<device-token>[/<extra>]`, and each
/// message pushed there goes to the device through APNs still encrypted, for the app's
/// notification extension to decrypt.
struct RelayFrontEnd: FrontEnd {
    let name = "relay"
    let config: RelayConfig
    let production: any APNsSending
    let development: any APNsSending
    let dispatcher: Dispatcher
    let limiter: TokenRateLimiter
    let metrics: GatewayMetrics
    let logger: Logger
    let listeners: [ListenerAddress]
    /// The relay's `Date` for a message's expiry (docs/architecture.md, "Time").
    let clock: any HeraldClock

    func addRoutes(to routes: inout RouteBuilder) {
        let relay = self
        routes.add(.exact("/relay-to/_health"), [.GET, .HEAD], errors: PlainTextErrors()) { _ in .empty(.ok) }
        routes.add(.subtree("/relay-to"), [.POST], maxBodyBytes: config.maxBodyBytes, errors: PlainTextErrors()) { request in
            do throws(RelayError) {
                let response = try await relay.relay(request)
                relay.metrics.counter(MetricName.relayRequests, [("result", "accepted")]).increment()
                return response
            } catch {
                relay.metrics.counter(MetricName.relayRequests, [("result", error.label)]).increment()
                throw error
            }
        }
    }

    var appsInUse: Set<String> { [config.apnsApp] }

    var ownListeners: [ListenerAddress] { listeners }
    /// Its own port speaks as toot-relay does, its connection-level errors included: plain text.
    var ownListenerErrors: any ErrorRenderer { PlainTextErrors() }

    /// Parses, checks and sends one message; 201 with `Location` once APNs accepted it.
    func relay(_ request: ServerRequest) async throws(RelayError) -> ServerResponse {
        let message = try RelayRequest.parse(request, now: clock.date)
        guard limiter.allow(message.deviceToken) else { throw .rateLimited(retryAfter: config.retryAfter) }
        let payload = RelayPayload.encode(body: message.body, senderKey: message.senderKey, salt: message.salt, extra: message.extra)
        guard payload.count <= APNsHosts.maxPayloadBytes else { throw .tooLarge(APNsHosts.maxPayloadBytes) }
        let sender = message.environment == .production ? production : development
        let id = SecureRandom.uuid().lowercasedString
        var requestLogger = logger
        requestLogger[metadataKey: "apns_id"] = "\(id)"
        let apnsMessage = APNsMessage(
            body: .raw(ByteBuffer(bytes: payload)), deviceToken: message.deviceToken, topic: config.topic, priority: message.priority,
            pushType: "alert",
            expiration: message.expiration, collapseId: message.collapseId, id: id)
        // A Mastodon server that retries after a timeout sends the same body with the same salt
        // to the same path: the same message, sent once (docs/operations.md, "Once").
        let key = RepeatKey([
            "relay", "\(message.environment)", message.deviceToken, message.extra ?? "", message.salt.map { Base64URL.encode($0) } ?? "",
            Base64URL.encode(message.body),
        ])
        // Traced under the request's id (its `X-Request-Id`, in the access log) and the device
        // token: `herald trace --pushkey <token>`.
        let trace = TraceStart(
            eventId: request.requestId, frontEnd: "relay", appId: sender.name, pushkey: message.deviceToken)
        let dispatched = await dispatcher.deliverOnce(
            [apnsMessage], app: sender.name, keys: [key], traces: [trace], logger: requestLogger
        ) {
            [requestLogger] message in
            let result = await sender.send(message, context: DispatchContext(logger: requestLogger))
            return Dispatcher.Delivery(result, pushkin: sender.name, token: message.deviceToken)
        }
        if let error = Self.error(for: dispatched.outcomes.first ?? .notDispatched, retryAfter: config.retryAfter) {
            // The sender retries an error: its retry finds the finish written.
            await dispatched.answered(heard: false).wait()
            throw error
        }
        var response = ServerResponse(status: .created)
        response.headers.add(name: "Location", value: "https://not-supported/\(id)")
        // With the record in PostgreSQL the finish is written once the 201 is, beside the sender's
        // next request on this connection, as a notify's are: nothing waits on the database
        // between APNs's answer and the sender's (docs/operations.md, "Once").
        if !dispatched.finishes.isEmpty {
            response.afterAnswer = { _ in dispatched.answered(heard: false) }
        }
        return response
    }

    /// What the sender is told of an APNs outcome: a dead token is 410 (the sender deletes the
    /// subscription); Herald's own or Apple's problems are 5xx, never a 4xx that would make a
    /// sender delete its users' subscriptions.
    static func error(for outcome: DeviceOutcome, retryAfter: Int) -> RelayError? {
        switch outcome {
        case .delivered:
            return nil
        case _ where outcome.providerSaysTokenIsDead:
            return .gone
        case .rejected(.invalidPushkey):
            return .badDeviceToken
        case .dropped(.payloadTooLarge):
            return .tooLarge(APNsHosts.maxPayloadBytes)
        case .failed(.provider(let answer)) where answer.status == 413:
            return .tooLarge(APNsHosts.maxPayloadBytes)
        case .failed(.provider(let answer)) where answer.status == 429:
            return .rateLimited(retryAfter: retryAfter)
        case .failed(.provider(let answer)) where answer.status >= 500:
            return .upstreamUnavailable(retryAfter: retryAfter)
        // `heldElsewhere`: another instance of the fleet is sending the same message, and the
        // retry after `Retry-After` is answered from the record.
        case .failed(.network), .failed(.heldElsewhere):
            return .upstreamUnavailable(retryAfter: retryAfter)
        case .rejected(let reason), .failed(let reason), .dropped(let reason), .skipped(let reason):
            return .upstreamRefused(reason.description)
        }
    }
}

/// Builds the relay from the `relay:` section.
struct RelayFrontEndFactory: FrontEndFactory {
    let sections = ["relay"]

    func makeFrontEnds(_ context: FrontEndContext, diagnostics: ConfigDiagnostics) -> [any FrontEnd] {
        guard let section = context.section("relay", diagnostics: diagnostics) else { return [] }
        let config = RelayConfig.read(section)
        guard config.enabled, !config.apnsApp.isEmpty,
            let apns = context.apnsSender(named: config.apnsApp, at: "relay.apns_app", diagnostics: diagnostics)
        else { return [] }
        guard !context.readOnly else { return [] }
        guard
            let production = context.apnsSender(
                of: apns, baseURL: config.productionBaseURL, at: "relay.production_base_url", diagnostics: diagnostics),
            let development = context.apnsSender(
                of: apns, baseURL: config.developmentBaseURL, at: "relay.development_base_url", diagnostics: diagnostics)
        else { return [] }
        for result in [
            "accepted", "bad_request", "unsupported_encoding", "too_large", "gone", "rate_limited", "upstream_refused",
            "upstream_unavailable",
        ] {
            _ = context.metrics.counter(MetricName.relayRequests, [("result", result)])
        }
        var logger = context.logger
        logger[metadataKey: "component"] = "relay"
        let listeners =
            config.port.map { [ListenerAddress(hosts: config.bindAddresses ?? context.config.http.bindAddresses, port: $0)] } ?? []
        return [
            RelayFrontEnd(
                config: config, production: production, development: development, dispatcher: context.dispatcher,
                limiter: TokenRateLimiter(perMinute: config.rateLimitPerMinute, burst: config.rateLimitBurst, clock: context.clock),
                metrics: context.metrics,
                logger: logger, listeners: listeners, clock: context.clock)
        ]
    }
}
