package import Crypto
import Foundation
package import HeraldCore
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Pushkins
import Synchronization

/// A fake APNs: HTTP/2 over TLS (with a test CA the tests trust), checking what Apple checks:
/// the path and token, the headers, the ES256 provider token (or the client certificate), and
/// the payload size. It records every request and can be scripted per device token.
package final class FakeAPNs: Sendable {
    package enum Behavior: Sendable {
        case accept
        /// Answer `status` with `{"reason": reason}`.
        case fail(Int, String, retryAfter: String? = nil)
        /// Use each behaviour once, in order, then keep the last.
        indirect case sequence([Behavior])
        indirect case delay(Duration, then: Behavior)
        /// Hold the answer until the test raises `event` (what a test waits on instead of time).
        indirect case hold(TestEvent, then: Behavior)
        /// Answer, then send GOAWAY and close the connection.
        indirect case goAway(then: Behavior)
        /// Close the TCP connection without answering.
        case dropConnection
        /// Reset the request's stream (RST_STREAM) without answering; the connection stays open.
        case resetStream
    }

    package struct Received: Sendable {
        package let token: String
        package let headers: [String: String]
        package let body: [UInt8]
        package let payload: JSONValue?
        package let connection: Int
        package let status: Int
        package let reason: String?
    }

    package enum Auth: Sendable {
        case token(keyId: String, teamId: String, publicKey: P256.Signing.PublicKey)
        case clientCertificate
    }

    private struct State {
        var behaviors: [String: Behavior] = [:]
        var defaultBehavior = Behavior.accept
        /// As APNs's development environment: every answer carries an `apns-unique-id`.
        var uniqueIds = false
        var served: [String: Int] = [:]
        var received: [Received] = []
        var connections = 0
        var answered = 0
        var open = 0
        var maxOpen = 0
        var streamsInFlight = 0
        var maxStreamsInFlight = 0
    }

    private let state = Mutex(State())
    /// Provider tokens to refuse with `ExpiredProviderToken` (`refuseCredentials`).
    package let credentialRefusals = CredentialRefusals()
    fileprivate let verifiedTokens = Mutex<[String: (header: JSONValue, claims: JSONValue)]>([:])
    package let topic: String
    package let auth: Auth
    package let port: Int
    private let channel: any Channel
    package var baseURL: String { "https://localhost:\(port)" }

    package static func start(
        pki: TestPKI, topic: String, auth: Auth, maxConcurrentStreams: Int = 1000, port: Int = 0, recordRequests: Bool = true
    ) async throws -> FakeAPNs {
        let (certificateFile, keyFile) = try pki.issueServerCertificate(name: "apns-\(UUID().uuidString.prefix(8))")
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem)))
        tls.applicationProtocols = ["h2"]
        if case .clientCertificate = auth {
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .file(pki.caFile)
        }
        let context = try NIOSSLContext(configuration: tls)
        let box = FakeBox()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let connection = box.value?.connectionOpened(channel) ?? 0
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    channel.configureHTTP2Pipeline(
                        mode: .server,
                        initialLocalSettings: [
                            HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams),
                            HTTP2Setting(parameter: .maxHeaderListSize, value: 16384),
                        ]
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandlers([
                                HTTP2FramePayloadToHTTP1ServerCodec(), StreamHandler(box: box, connection: connection),
                            ])
                        }
                    }.map { _ in () }
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        let fake = FakeAPNs(
            topic: topic, auth: auth, port: channel.localAddress?.port ?? 0, channel: channel, recordRequests: recordRequests)
        box.set(fake)
        return fake
    }

    private let recordRequests: Bool

    private init(topic: String, auth: Auth, port: Int, channel: any Channel, recordRequests: Bool) {
        self.recordRequests = recordRequests
        self.topic = topic
        self.auth = auth
        self.port = port
        self.channel = channel
    }

    package func stop() async {
        try? await channel.close()
    }

    package func script(_ token: String, _ behavior: Behavior) {
        state.withLock {
            $0.behaviors[token] = behavior
            $0.served[token] = 0
        }
    }

    /// The next `count` distinct provider tokens shown are refused as expired, for good.
    package func refuseCredentials(_ count: Int = 1) { credentialRefusals.refuse(count) }

    /// The behaviour for tokens without a script of their own.
    package func scriptDefault(_ behavior: Behavior) { state.withLock { $0.defaultBehavior = behavior } }

    /// Answers as APNs's development environment does, with an `apns-unique-id` on every answer.
    package func actAsDevelopment() { state.withLock { $0.uniqueIds = true } }
    var sendsUniqueIds: Bool { state.withLock { $0.uniqueIds } }

    package var received: [Received] { state.withLock { $0.received } }
    /// How many requests for `token` arrived since it was last scripted, answered or not (a held
    /// one counts at once).
    package func arrived(token: String) -> Int { state.withLock { $0.served[token, default: 0] } }
    package func received(token: String) -> [Received] { state.withLock { $0.received.filter { $0.token == token } } }
    /// TCP connections accepted so far.
    package var connectionsAccepted: Int { state.withLock { $0.connections } }
    /// Requests answered, recorded or not.
    package var answered: Int { state.withLock { $0.answered } }
    /// The most connections open at once.
    package var maxOpenConnections: Int { state.withLock { $0.maxOpen } }
    /// The most requests in progress at once, over all connections.
    package var maxConcurrentRequests: Int { state.withLock { $0.maxStreamsInFlight } }

    fileprivate func connectionOpened(_ channel: any Channel) -> Int {
        let id = state.withLock { s -> Int in
            s.connections += 1
            s.open += 1
            s.maxOpen = max(s.maxOpen, s.open)
            return s.connections
        }
        channel.closeFuture.whenComplete { _ in self.state.withLock { $0.open -= 1 } }
        return id
    }

    struct Reply: Sendable {
        var status: Int
        var reason: String?
        var retryAfter: String?
        var goAway = false
        var drop = false
        var reset = false
    }

    /// The answer to one request, computed on the stream's event loop; only a behaviour that waits
    /// (`.delay`) runs in a task.
    fileprivate func answer(head: HTTPRequestHead, body: [UInt8], connection: Int, on eventLoop: any EventLoop)
        -> EventLoopFuture<Reply>
    {
        state.withLock {
            $0.streamsInFlight += 1
            $0.maxStreamsInFlight = max($0.maxStreamsInFlight, $0.streamsInFlight)
        }
        var lowercased: [String: String] = [:]
        for (name, value) in head.headers { lowercased[name.lowercased()] = value }
        let headers = lowercased
        let prefix = "/3/device/"
        let token = head.uri.hasPrefix(prefix) ? String(head.uri.dropFirst(prefix.count)) : ""
        let reply: EventLoopFuture<Reply>
        if let refused = check(head: head, headers: headers, token: token, body: body) {
            reply = eventLoop.makeSucceededFuture(refused)
        } else {
            let (behavior, index) = state.withLock { s -> (Behavior, Int) in
                let n = s.served[token, default: 0]
                s.served[token] = n + 1
                return (s.behaviors[token] ?? s.defaultBehavior, n)
            }
            if let now = performAtOnce(behavior, index: index) {
                reply = eventLoop.makeSucceededFuture(now)
            } else {
                let promise = eventLoop.makePromise(of: Reply.self)
                promise.completeWithTask { await self.perform(behavior, index: index) }
                reply = promise.futureResult
            }
        }
        return reply.map { final in
            self.finish(final, token: token, headers: headers, body: body, connection: connection)
            return final
        }
    }

    private func finish(_ reply: Reply, token: String, headers: [String: String], body: [UInt8], connection: Int) {
        state.withLock {
            $0.streamsInFlight -= 1
            $0.answered += 1
        }
        guard recordRequests else { return }
        state.withLock {
            $0.received.append(
                Received(
                    token: token, headers: headers, body: body, payload: try? JSONParser.parse(body), connection: connection,
                    status: reply.status, reason: reply.reason))
        }
    }

    /// The reply of a behaviour that does not wait, or nil for one that does.
    private func performAtOnce(_ behavior: Behavior, index: Int) -> Reply? {
        switch behavior {
        case .accept: return Reply(status: 200)
        case .fail(let status, let reason, let retryAfter): return Reply(status: status, reason: reason, retryAfter: retryAfter)
        case .sequence(let list):
            guard let last = list.last else { return Reply(status: 200) }
            return performAtOnce(index < list.count ? list[index] : last, index: 0)
        case .delay, .hold: return nil
        case .goAway(let then):
            guard var reply = performAtOnce(then, index: index) else { return nil }
            reply.goAway = true
            return reply
        case .dropConnection:
            return Reply(status: 0, drop: true)
        case .resetStream:
            return Reply(status: 0, reset: true)
        }
    }

    private func perform(_ behavior: Behavior, index: Int) async -> Reply {
        switch behavior {
        case .accept: return Reply(status: 200)
        case .fail(let status, let reason, let retryAfter): return Reply(status: status, reason: reason, retryAfter: retryAfter)
        case .sequence(let list):
            guard let last = list.last else { return Reply(status: 200) }
            return await perform(index < list.count ? list[index] : last, index: 0)
        case .delay(let duration, let then):
            try? await Task.sleep(for: duration)
            return await perform(then, index: index)
        case .hold(let event, let then):
            await event.wait()
            return await perform(then, index: index)
        case .goAway(let then):
            var reply = await perform(then, index: index)
            reply.goAway = true
            return reply
        case .dropConnection:
            return Reply(status: 0, drop: true)
        case .resetStream:
            return Reply(status: 0, reset: true)
        }
    }

    /// What Apple itself would refuse, or nil.
    private func check(head: HTTPRequestHead, headers: [String: String], token: String, body: [UInt8]) -> Reply? {
        guard head.method == .POST else { return Reply(status: 405, reason: "MethodNotAllowed") }
        guard head.uri.hasPrefix("/3/device/") else { return Reply(status: 404, reason: "BadPath") }
        guard !token.isEmpty, token.allSatisfy(\.isHexDigit) else { return Reply(status: 400, reason: "BadDeviceToken") }
        if case .token(let keyId, let teamId, let publicKey) = auth {
            guard let bearer = headers["authorization"], bearer.hasPrefix("bearer ") else {
                return Reply(status: 403, reason: "MissingProviderToken")
            }
            guard let (header, claims) = verifiedProviderToken(String(bearer.dropFirst(7)), publicKey: publicKey),
                header["alg"] == "ES256", header["kid"]?.stringValue == keyId, claims["iss"]?.stringValue == teamId,
                let iat = claims["iat"]?.pythonInt
            else {
                return Reply(status: 403, reason: "InvalidProviderToken")
            }
            if Double(iat) < Date().timeIntervalSince1970 - 3600 { return Reply(status: 403, reason: "ExpiredProviderToken") }
            if credentialRefusals.isRefused(String(bearer.dropFirst(7))) { return Reply(status: 403, reason: "ExpiredProviderToken") }
        }
        if let reason = headerProblem(headers) { return Reply(status: 400, reason: reason) }
        if let expiration = headers["apns-expiration"], Int(expiration) == nil { return Reply(status: 400, reason: "BadExpirationDate") }
        if let collapse = headers["apns-collapse-id"], collapse.utf8.count > 64 { return Reply(status: 400, reason: "BadCollapseId") }
        if let pushType = headers["apns-push-type"], !APNsConfig.pushTypes.contains(pushType) {
            return Reply(status: 400, reason: "InvalidPushType")
        }
        if body.count > 4096 { return Reply(status: 413, reason: "PayloadTooLarge") }
        guard case .object(let payload)? = try? JSONParser.parse(body) else { return Reply(status: 400, reason: "PayloadEmpty") }
        // Apple: a background notification's `aps` holds `content-available` and nothing that
        // triggers user interaction; the header must reflect the payload, or APNs may return an
        // error, delay the notification or drop it. This fake refuses it.
        if headers["apns-push-type"] == "background", let problem = Self.backgroundProblem(payload) {
            return Reply(status: 400, reason: problem)
        }
        return nil
    }
}

extension FakeAPNs {
    /// Why a payload sent as `apns-push-type: background` is not one: its `aps` must be
    /// `{"content-available": 1}` alone.
    package static func backgroundProblem(_ payload: JSONObject) -> String? {
        guard let aps = payload["aps"]?.objectValue, aps["content-available"] == .int(1) else { return "BackgroundWithoutContentAvailable" }
        return aps.keys.allSatisfy({ $0 == "content-available" }) ? nil : "BackgroundWithVisibleContent"
    }

    /// What Apple refuses in a request's topic, priority and push type (lower-cased header
    /// names), as its 400 reason: the topic is the bundle id with the push type's suffix, and some
    /// types take one priority only (`APNsPushType`, docs/compatibility/apns.md, "Push types").
    package func headerProblem(_ headers: [String: String]) -> String? {
        guard let topic = headers["apns-topic"] else { return "MissingTopic" }
        let type = headers["apns-push-type"].flatMap(APNsPushType.named)
        let suffix = type?.topicSuffix ?? ""
        guard topic.hasSuffix(suffix), String(topic.dropLast(suffix.count)) == self.topic else {
            return topic.hasPrefix(self.topic) ? "BadTopic" : "DeviceTokenNotForTopic"
        }
        if let priority = headers["apns-priority"], priority != "5" && priority != "10" { return "BadPriority" }
        if let type, !type.priorities.contains(Int(headers["apns-priority"] ?? "10") ?? 10) { return "BadPriority" }
        return nil
    }

    /// The token's header and claims if its signature verifies. A provider token is reused for up
    /// to an hour, so, like Apple, the fake verifies each distinct token once; its claims are still
    /// checked on every request.
    fileprivate func verifiedProviderToken(_ jwt: String, publicKey: P256.Signing.PublicKey) -> (header: JSONValue, claims: JSONValue)? {
        if let known = verifiedTokens.withLock({ $0[jwt] }) { return known }
        guard let verified = JWT.verifyES256(jwt, publicKey: publicKey) else { return nil }
        verifiedTokens.withLock {
            if $0.count >= 64 { $0.removeAll() }
            $0[jwt] = verified
        }
        return verified
    }
}

private final class FakeBox: Sendable {
    private let fake = Mutex<FakeAPNs?>(nil)
    var value: FakeAPNs? { fake.withLock { $0 } }
    func set(_ value: FakeAPNs) { fake.withLock { $0 = value } }
}

/// One HTTP/2 stream, seen as an HTTP/1 request.
private final class StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let box: FakeBox
    let connection: Int
    var head: HTTPRequestHead?
    var body: [UInt8] = []

    init(box: FakeBox, connection: Int) {
        self.box = box
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h): head = h
        case .body(let b): body.append(contentsOf: b.readableBytesView)
        case .end:
            guard let head, let fake = box.value else { return }
            let body = self.body
            let connection = self.connection
            let bound = NIOLoopBound((context, self), eventLoop: context.eventLoop)
            fake.answer(head: head, body: body, connection: connection, on: context.eventLoop).whenSuccess { reply in
                let (context, handler) = bound.value
                if reply.drop {
                    context.channel.parent?.close(promise: nil)
                    return
                }
                if reply.reset {
                    context.close(promise: nil)  // closing an open stream sends RST_STREAM (CANCEL)
                    return
                }
                var headers = HTTPHeaders()
                // As Apple: the request's own apns-id, or one made for it.
                headers.add(name: "apns-id", value: head.headers.first(name: "apns-id") ?? UUID().uuidString)
                if fake.sendsUniqueIds { headers.add(name: "apns-unique-id", value: UUID().uuidString.lowercased()) }
                var payload = ByteBuffer()
                if let reason = reply.reason {
                    // As Apple: a 410 says since when the token is not valid (milliseconds).
                    var error: JSONObject = ["reason": .string(reason)]
                    if reply.status == 410 { error["timestamp"] = .int(1_760_000_000_000) }
                    payload = ByteBuffer(bytes: JSONWriter.serialize(.object(error)))
                    headers.add(name: "content-type", value: "application/json")
                }
                if let retryAfter = reply.retryAfter { headers.add(name: "retry-after", value: retryAfter) }
                context.write(
                    handler.wrapOutboundOut(
                        .head(HTTPResponseHead(version: .http2, status: .init(statusCode: reply.status), headers: headers))),
                    promise: nil)
                if payload.readableBytes > 0 { context.write(handler.wrapOutboundOut(.body(.byteBuffer(payload))), promise: nil) }
                context.writeAndFlush(handler.wrapOutboundOut(.end(nil)), promise: nil)
                if reply.goAway, let parent = context.channel.parent {
                    let frame = HTTP2Frame(
                        streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
                    parent.writeAndFlush(frame, promise: nil)
                    parent.eventLoop.scheduleTask(in: .milliseconds(50)) { parent.close(promise: nil) }
                }
            }
        }
    }
}
