package import Crypto
import Foundation
package import HeraldCore
package import HeraldHTTPServer
import Logging
import NIOCore
package import NIOHTTP1
import Pushkins
import Synchronization

/// A push service for tests, the benchmark and the demo: it holds each subscription's private
/// key and auth secret, decrypts what it receives (RFC 8291), verifies the VAPID token
/// (RFC 8292), records every request, and answers as scripted per subscription.
package final class FakeWebPushService: HTTPHandler, Sendable {
    package struct Subscription: Sendable {
        package let path: String
        package let privateKey: P256.KeyAgreement.PrivateKey
        package let authSecret: [UInt8]
        package let endpoint: String
        /// The `pushkey` a homeserver would send: base64url of the public key.
        package var p256dh: String { Base64URL.encode(privateKey.publicKey.x963Representation) }
        package var auth: String { Base64URL.encode(authSecret) }
    }

    package indirect enum Behavior: Sendable {
        /// Answer this status (201 by default), with an optional `Retry-After`, and a body
        /// `{"reason": …}` as Apple's push service explains a refusal.
        case respond(status: Int = 201, retryAfter: String? = nil, reason: String? = nil)
        /// Use each behaviour once, in order, then keep the last.
        case sequence([Behavior])
        /// Wait, then behave as given.
        case delay(Duration, then: Behavior)
        /// Hold the answer until the test raises `event` (what a test waits on instead of time).
        case hold(TestEvent, then: Behavior)
    }

    package struct Received: Sendable {
        package let path: String
        package let headers: HTTPHeaders
        package let body: [UInt8]
        /// The decrypted payload, parsed; nil when it did not decrypt or parse.
        package let payload: JSONValue?
        package let plaintext: [UInt8]?
        package let problems: [String]
        package let vapidClaims: JSONValue?

        package func header(_ name: String) -> String? { headers.first(name: name) }

        /// Whether it is a Declarative Web Push message (`web_push: 8030`), which WebKit shows by
        /// itself.
        package var declarative: Bool { payload?["web_push"] == 8030 }
    }

    private struct State {
        var subscriptions: [String: Subscription] = [:]
        var behaviors: [String: Behavior] = [:]
        var served: [String: Int] = [:]
        var received: [Received] = []
    }

    private let state = Mutex(State())
    private let recordRequests: Bool
    package let server: HTTPServer
    /// Where subscriptions' endpoints point, and the VAPID audience it expects: its own listener,
    /// or the front it is served behind (`serve(behind:)`).
    package var baseURL: String { front.withLock { $0 } ?? "http://127.0.0.1:\(server.port)" }
    private let front = Mutex<String?>(nil)
    private let serveTask: Mutex<Task<Void, Never>?> = Mutex(nil)
    private let box: HandlerBox<FakeWebPushService>

    /// Starts listening on 127.0.0.1 (port 0 picks a free one).
    package static func start(port: Int = 0, recordRequests: Bool = true) async throws -> FakeWebPushService {
        let box = HandlerBox<FakeWebPushService>()
        let server = try await HTTPServer.bind(
            host: "127.0.0.1", port: port, handler: box, logger: Logger(label: "fake-webpush"), clock: SystemClock())
        let service = FakeWebPushService(server: server, box: box, recordRequests: recordRequests)
        box.set(service)
        service.serveTask.withLock { $0 = Task { await server.serve() } }
        return service
    }

    private init(server: HTTPServer, box: HandlerBox<FakeWebPushService>, recordRequests: Bool) {
        self.server = server
        self.box = box
        self.recordRequests = recordRequests
    }

    package func stop() async {
        await server.shutdown()
        await serveTask.withLock { $0 }?.value
    }

    /// Served behind `origin` (a `TLSFront`): new subscriptions' endpoints and the VAPID audience
    /// are on that origin.
    package func serve(behind origin: String) { front.withLock { $0 = origin } }

    /// A new subscription at `/push/<path>`.
    @discardableResult
    package func subscribe(_ name: String = UUID().uuidString, behavior: Behavior = .respond()) -> Subscription {
        let path = "/push/\(name)"
        let subscription = Subscription(
            path: path, privateKey: P256.KeyAgreement.PrivateKey(), authSecret: (0..<16).map { _ in UInt8.random(in: 0...255) },
            endpoint: baseURL + path)
        state.withLock {
            $0.subscriptions[path] = subscription
            $0.behaviors[path] = behavior
        }
        return subscription
    }

    package func setBehavior(_ behavior: Behavior, for subscription: Subscription) {
        state.withLock {
            $0.behaviors[subscription.path] = behavior
            $0.served[subscription.path] = 0
        }
    }

    package var received: [Received] { state.withLock { $0.received } }

    package func received(for subscription: Subscription) -> [Received] {
        state.withLock { $0.received.filter { $0.path == subscription.path } }
    }

    package func handle(_ request: ServerRequest) async -> ServerResponse {
        let path = request.path
        let (subscription, behavior, index) = state.withLock { s -> (Subscription?, Behavior?, Int) in
            let n = s.served[path, default: 0]
            s.served[path] = n + 1
            return (s.subscriptions[path], s.behaviors[path], n)
        }
        guard request.method == .POST, let subscription else {
            return ServerResponse(status: .notFound)
        }
        let body = Array(request.body.readableBytesView)
        if recordRequests {
            state.withLock { $0.received.append(inspect(request: request, body: body, subscription: subscription)) }
        }
        return await respond(behavior ?? .respond(), index: index)
    }

    private func respond(_ behavior: Behavior, index: Int) async -> ServerResponse {
        switch behavior {
        case .respond(let status, let retryAfter, let reason):
            var response = ServerResponse(status: HTTPResponseStatus(statusCode: status))
            if let reason { response = .json(HTTPResponseStatus(statusCode: status), ["reason": .string(reason)]) }
            if let retryAfter { response.headers.add(name: "Retry-After", value: retryAfter) }
            if status == 201 { response.headers.add(name: "Location", value: "\(baseURL)/message/\(UUID().uuidString)") }
            return response
        case .sequence(let list):
            guard let last = list.last else { return ServerResponse(status: .created) }
            return await respond(index < list.count ? list[index] : last, index: 0)
        case .delay(let duration, let then):
            try? await Task.sleep(for: duration)
            return await respond(then, index: index)
        case .hold(let event, let then):
            await event.wait()
            return await respond(then, index: index)
        }
    }

    private func inspect(request: ServerRequest, body: [UInt8], subscription: Subscription) -> Received {
        var problems: [String] = []
        var plaintext: [UInt8]?
        do {
            plaintext = try WebPushEncryption.decrypt(body, uaPrivate: subscription.privateKey, authSecret: subscription.authSecret)
        } catch {
            problems.append("cannot decrypt: \(error)")
        }
        let payload = plaintext.flatMap { try? JSONParser.parse($0) }
        if plaintext != nil && payload == nil { problems.append("payload is not JSON") }
        if let payload, payload["web_push"] != nil { Self.checkDeclarative(payload, problems: &problems) }
        if request.headers.first(name: "Content-Encoding") != "aes128gcm" { problems.append("Content-Encoding is not aes128gcm") }
        if request.headers.first(name: "TTL").flatMap(Int.init) == nil { problems.append("TTL header missing") }
        if body.count > 4096 { problems.append("body is \(body.count) bytes, over 4096") }
        let claims = verifyVAPID(request.headers.first(name: "Authorization"), problems: &problems)
        return Received(
            path: request.path, headers: request.headers, body: body, payload: payload, plaintext: plaintext, problems: problems,
            vapidClaims: claims)
    }

    /// What WebKit requires of a Declarative Web Push message (webkit.org/blog/16535):
    /// `web_push: 8030`, a `notification` with a string `title` and a URL `navigate`, and the
    /// optional members of their types.
    static func checkDeclarative(_ payload: JSONValue, problems: inout [String]) {
        guard payload["web_push"] == 8030 else { return problems.append("web_push is not 8030") }
        guard case .object(let notification)? = payload["notification"] else { return problems.append("notification missing") }
        if notification["title"]?.stringValue?.isEmpty ?? true { problems.append("notification.title missing") }
        if URL(string: notification["navigate"]?.stringValue ?? "")?.scheme == nil { problems.append("notification.navigate is not a URL") }
        for key in ["body", "lang", "dir", "tag", "image"] where notification[key] != nil && notification[key]?.stringValue == nil {
            problems.append("notification.\(key) is not a string")
        }
        if let badge = notification["app_badge"], badge.pythonInt == nil { problems.append("notification.app_badge is not a number") }
        for key in ["silent"] where notification[key] != nil {
            if case .bool? = notification[key] {} else { problems.append("notification.\(key) is not a boolean") }
        }
        if let mutable = payload["mutable"] {
            if case .bool = mutable {} else { problems.append("mutable is not a boolean") }
        }
    }

    private func verifyVAPID(_ header: String?, problems: inout [String]) -> JSONValue? {
        guard let (token, key) = VAPIDAuthorization.parts(header) else {
            problems.append("no vapid Authorization")
            return nil
        }
        guard let token, let key, let keyBytes = Base64URL.decode(key),
            let publicKey = try? P256.Signing.PublicKey(x963Representation: keyBytes)
        else {
            problems.append("vapid header lacks t= or a P-256 k=")
            return nil
        }
        guard let (header, claims) = JWT.verifyES256(token, publicKey: publicKey) else {
            problems.append("vapid JWT signature does not verify")
            return nil
        }
        if header["alg"] != "ES256" { problems.append("vapid alg is not ES256") }
        if claims["aud"]?.stringValue != baseURL { problems.append("vapid aud is not \(baseURL)") }
        let now = Date().timeIntervalSince1970
        if let exp = claims["exp"]?.pythonInt {
            if Double(exp) <= now || Double(exp) > now + 24 * 3600 { problems.append("vapid exp is not within 24 h") }
        } else {
            problems.append("vapid exp missing")
        }
        if !(claims["sub"]?.stringValue?.hasPrefix("mailto:") ?? false) { problems.append("vapid sub is not mailto:") }
        return claims
    }
}
