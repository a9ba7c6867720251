package import Crypto
import Foundation
package import HeraldCore
package import HeraldHTTPServer
import Logging
import NIOCore
package import NIOHTTP1
import Pushkins
import Synchronization

/// A UnifiedPush distributor's push server (ntfy, NextPush…) on loopback: it takes a message
/// `POST`ed to an endpoint `/up/<name>` and records it; each endpoint answers as scripted.
///
/// An endpoint made by `webPushEndpoint` is a distributor that is a plain Web Push service (SunUp
/// forwards to Mozilla's autopush) and applies autopush's published header rules: a push without
/// `TTL` is 400 errno 111, a body without `Content-Encoding: aes128gcm` (or `aesgcm`) is 400
/// errno 110, and a subscription restricted to a VAPID key is 401 errno 109 without a valid
/// `Authorization` signed by that key. Such an endpoint has the subscription's keys, and decrypts
/// what it is given as the phone's connector would.
package final class FakeUnifiedPushDistributor: HTTPHandler, Sendable {
    package struct Received: Sendable {
        package let path: String
        package let headers: HTTPHeaders
        package let body: [UInt8]
        /// What the phone's connector decrypts, for an endpoint with keys; the body otherwise.
        package let plaintext: [UInt8]?
        package let status: Int
        package var json: JSONValue? { plaintext.flatMap { try? JSONParser.parse($0) } }
    }

    /// A Web Push endpoint's subscription: its keys, and the VAPID key it is restricted to.
    package struct Subscription: Sendable {
        package let endpoint: String
        package let path: String
        package let privateKey: P256.KeyAgreement.PrivateKey
        package let authSecret: [UInt8]
        package let vapidKey: String?
        package var p256dh: String { Base64URL.encode(privateKey.publicKey.x963Representation) }
        package var auth: String { Base64URL.encode(authSecret) }
    }

    package let server: HTTPServer
    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    private let serveTask: Mutex<Task<Void, Never>?> = Mutex(nil)
    private struct State {
        var received: [Received] = []
        var statuses: [String: [Int]] = [:]
        var subscriptions: [String: Subscription] = [:]
    }
    private let state = Mutex(State())

    package static func start() async throws -> FakeUnifiedPushDistributor {
        let box = HandlerBox<FakeUnifiedPushDistributor>()
        let server = try await HTTPServer.bind(
            host: "127.0.0.1", port: 0, handler: box, logger: Logger(label: "fake-unifiedpush"), clock: SystemClock())
        let distributor = FakeUnifiedPushDistributor(server: server)
        box.set(distributor)
        distributor.serveTask.withLock { $0 = Task { await server.serve() } }
        return distributor
    }

    private init(server: HTTPServer) { self.server = server }

    package func stop() async {
        await server.shutdown()
        await serveTask.withLock { $0 }?.value
    }

    /// A new endpoint URL; it answers `statuses` in turn (the last one repeats), 201 by default as
    /// ntfy does.
    package func endpoint(_ name: String = UUID().uuidString, statuses: [Int] = [201]) -> String {
        state.withLock { $0.statuses["/up/\(name)"] = statuses }
        return "\(baseURL)/up/\(name)"
    }

    /// A new endpoint of a distributor that is a Web Push service, with its subscription's keys;
    /// restricted to `vapidKey` (an application server key) when given.
    package func webPushEndpoint(_ name: String = UUID().uuidString, restrictedTo vapidKey: String? = nil) -> Subscription {
        let path = "/wpush/\(name)"
        let subscription = Subscription(
            endpoint: baseURL + path, path: path, privateKey: P256.KeyAgreement.PrivateKey(),
            authSecret: (0..<16).map { _ in UInt8.random(in: 0...255) }, vapidKey: vapidKey)
        state.withLock { $0.subscriptions[path] = subscription }
        return subscription
    }

    package var received: [Received] { state.withLock { $0.received } }
    package func received(at endpoint: String) -> [Received] {
        let path = URLComponents(string: endpoint)?.path ?? endpoint
        return received.filter { $0.path == path }
    }

    package func handle(_ request: ServerRequest) async -> ServerResponse {
        let body = Array(request.body.readableBytesView)
        if let subscription = state.withLock({ $0.subscriptions[request.path] }) {
            let (response, plaintext) = webPush(request, body: body, subscription: subscription)
            state.withLock {
                $0.received.append(
                    Received(
                        path: request.path, headers: request.headers, body: body, plaintext: plaintext,
                        status: Int(response.status.code)))
            }
            return response
        }
        let status = state.withLock { s -> Int in
            guard var statuses = s.statuses[request.path] else { return 404 }
            let next = statuses.count > 1 ? statuses.removeFirst() : statuses[0]
            s.statuses[request.path] = statuses
            return next
        }
        state.withLock {
            $0.received.append(Received(path: request.path, headers: request.headers, body: body, plaintext: body, status: status))
        }
        return ServerResponse(status: HTTPResponseStatus(statusCode: status))
    }

    /// autopush's rules, in its order: `TTL`, the encoding, then VAPID for a restricted subscription.
    private func webPush(_ request: ServerRequest, body: [UInt8], subscription: Subscription) -> (ServerResponse, [UInt8]?) {
        guard let ttl = request.headers.first(name: "TTL"), Int(ttl).map({ $0 >= 0 }) == true else {
            return (Self.refusal(400, errno: 111, "Missing TTL Header"), nil)
        }
        let encoding = request.headers.first(name: "Content-Encoding")?.lowercased()
        if !body.isEmpty, encoding != "aes128gcm", encoding != "aesgcm" {
            return (Self.refusal(400, errno: 110, "Unknown Content-Encoding"), nil)
        }
        if let vapidKey = subscription.vapidKey, !validVAPID(request.headers.first(name: "Authorization"), key: vapidKey) {
            return (Self.refusal(401, errno: 109, "Invalid Authorization: VAPID"), nil)
        }
        let plaintext = try? WebPushEncryption.decrypt(body, uaPrivate: subscription.privateKey, authSecret: subscription.authSecret)
        var response = ServerResponse(status: .created)
        response.headers.add(name: "Location", value: "\(baseURL)/m/\(UUID().uuidString)")
        return (response, plaintext)
    }

    /// `vapid t=<JWT>,k=<key>` with `k` the restricted key and a JWT it signed for this origin.
    private func validVAPID(_ header: String?, key: String) -> Bool {
        guard let (token, given) = VAPIDAuthorization.parts(header), let token, given == key, let bytes = Base64URL.decode(key),
            let publicKey = try? P256.Signing.PublicKey(x963Representation: bytes),
            let (_, claims) = JWT.verifyES256(token, publicKey: publicKey)
        else { return false }
        return claims["aud"]?.stringValue == baseURL && (claims["exp"]?.pythonInt ?? 0) > Int64(Date().timeIntervalSince1970)
    }

    /// autopush's error body (`code`, `errno`, `error`, `message`).
    static func refusal(_ status: Int, errno: Int64, _ message: String) -> ServerResponse {
        let code = HTTPResponseStatus(statusCode: status)
        return .json(
            code,
            ["code": .int(Int64(status)), "errno": .int(errno), "error": .string(code.reasonPhrase), "message": .string(message)])
    }
}
