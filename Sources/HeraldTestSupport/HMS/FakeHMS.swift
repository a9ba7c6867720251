import Crypto
import Foundation
package import HeraldCore
package import HeraldHTTPServer
import Logging
import NIOCore
package import NIOHTTP1
import Synchronization
import _CryptoExtras

/// A fake Huawei Push Kit speaking both APIs (docs/compatibility/hms.md): the OAuth 2.0
/// client-credentials token endpoint and the Android send API (`/v1/{app_id}/messages:send`,
/// bearer access tokens), and HarmonyOS's scenario API (`/v3/{project_id}/messages:send`), which
/// verifies the service account's PS256 JWT and the `push-type` header. Answers carry Huawei's
/// string `code`, and refused tokens in `msg` as Huawei encodes them (a JSON document in a string:
/// `illegal_tokens` for Android, `illegalTokens` by reason for HarmonyOS). Scriptable per token.
package final class FakeHMS: HTTPHandler, Sendable {
    package indirect enum Behavior: Sendable {
        case accept
        /// Refused as invalid: `illegal_tokens` (Android) / `tokenFormatError` (HarmonyOS).
        case invalidToken
        /// HarmonyOS: a token of another project (`noRight`).
        case noRight
        /// The whole request answered `status` with `code` (a flow control 503, an internal 500, a
        /// configuration 403…).
        case answer(status: Int, code: String)
        case sequence([Behavior])
        case delay(Duration, then: Behavior)
    }

    package struct Received: Sendable {
        package let path: String
        package let headers: HTTPHeaders
        package let body: JSONValue?
        package let status: Int
        package let code: String
        package let tokens: [String]
    }

    private struct State {
        var behaviors: [String: Behavior] = [:]
        var served: [String: Int] = [:]
        var received: [Received] = []
        var issued: [String: Date] = [:]
        var tokenRequests = 0
        var problems: [String] = []
    }

    package let appId = "104567891"
    package let appSecret = "fake-hms-secret/+&="
    package let projectId = "388421841221234567"
    package let subAccount = "1234567890123"
    package let keyId = "fake-key-id"
    package let serviceAccountFile: String
    package let appSecretFile: String
    private let publicKey: _RSA.Signing.PublicKey
    private let state = Mutex(State())
    /// Access tokens (Android) and JWTs (HarmonyOS) to refuse as expired (`refuseCredentials`).
    package let credentialRefusals = CredentialRefusals()
    package let server: HTTPServer
    private let serveTask = Mutex<Task<Void, Never>?>(nil)
    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    package var tokenURL: String { "\(baseURL)/oauth2/v3/token" }

    /// The service account's RSA key, made once per process (a 2048-bit key takes a while).
    private static let accountKey: Result<_RSA.Signing.PrivateKey, any Error> = Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    /// Starts on 127.0.0.1 and writes the app secret and a service-account key file into
    /// `directory`.
    package static func start(directory: String, port: Int = 0, recordRequests: Bool = true) async throws -> FakeHMS {
        let box = HandlerBox<FakeHMS>()
        let server = try await HTTPServer.bind(
            host: "127.0.0.1", port: port, handler: box, logger: Logger(label: "fake-hms"), clock: SystemClock())
        let key = try accountKey.get()
        let tag = UUID().uuidString.prefix(8)
        let fake = FakeHMS(
            server: server, publicKey: key.publicKey, serviceAccountFile: "\(directory)/hms-account-\(tag).json",
            appSecretFile: "\(directory)/hms-secret-\(tag)", recordRequests: recordRequests)
        let account: JSONValue = [
            "project_id": .string(fake.projectId), "key_id": .string(fake.keyId), "private_key": .string(key.pkcs8PEMRepresentation),
            "sub_account": .string(fake.subAccount), "auth_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/authorize",
            "token_uri": .string(fake.tokenURL), "auth_provider_cert_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/certs",
        ]
        try JSONWriter.string(account).write(toFile: fake.serviceAccountFile, atomically: true, encoding: .utf8)
        try (fake.appSecret + "\n").write(toFile: fake.appSecretFile, atomically: true, encoding: .utf8)
        box.set(fake)
        fake.serveTask.withLock { $0 = Task { await server.serve() } }
        return fake
    }

    private let recordRequests: Bool

    private init(
        server: HTTPServer, publicKey: _RSA.Signing.PublicKey, serviceAccountFile: String, appSecretFile: String, recordRequests: Bool
    ) {
        self.recordRequests = recordRequests
        self.server = server
        self.publicKey = publicKey
        self.serviceAccountFile = serviceAccountFile
        self.appSecretFile = appSecretFile
    }

    package func stop() async {
        await server.shutdown()
        await serveTask.withLock { $0 }?.value
    }

    package func script(_ token: String, _ behavior: Behavior) {
        state.withLock {
            $0.behaviors[token] = behavior
            $0.served[token] = 0
        }
    }

    /// The next `count` distinct credentials shown (access tokens or JWTs) are refused as expired,
    /// for good.
    package func refuseCredentials(_ count: Int = 1) { credentialRefusals.refuse(count) }

    /// Invalidates every access token issued so far (the next Android send is refused).
    package func revokeAccessTokens() { state.withLock { $0.issued.removeAll() } }

    package var received: [Received] { state.withLock { $0.received } }
    package var tokenRequests: Int { state.withLock { $0.tokenRequests } }
    /// What the fake found wrong in Herald's credentials or requests (empty when all was right).
    package var problems: [String] { state.withLock { $0.problems } }

    package func handle(_ request: ServerRequest) async -> ServerResponse {
        switch request.path {
        case "/oauth2/v3/token": return issueToken(request)
        case "/v1/\(appId)/messages:send": return await send(request, harmony: false)
        case "/v3/\(projectId)/messages:send": return await send(request, harmony: true)
        default: return Self.answer(404, "80300002", "wrong app or project in the URL")
        }
    }

    // MARK: OAuth (Android)

    private func issueToken(_ request: ServerRequest) -> ServerResponse {
        var form: [String: String] = [:]
        for pair in String(buffer: request.body).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        state.withLock { $0.tokenRequests += 1 }
        guard form["grant_type"] == "client_credentials", form["client_id"] == appId, form["client_secret"] == appSecret else {
            state.withLock { $0.problems.append("token request \(form.keys.sorted())") }
            return .json(.badRequest, ["error": 1101, "sub_error": 12304, "error_description": "invalid client_secret"])
        }
        let token = "CV\(UUID().uuidString)/fake=="
        state.withLock { $0.issued[token] = Date().addingTimeInterval(3600) }
        return .json(.ok, ["access_token": .string(token), "expires_in": 3600, "token_type": "Bearer"])
    }

    // MARK: sending

    private func send(_ request: ServerRequest, harmony: Bool) async -> ServerResponse {
        let body = try? JSONParser.parse(request.body.readableBytesView)
        let tokens = (harmony ? body?["target"]?["token"] : body?["message"]?["token"])?.arrayValue?.compactMap(\.stringValue) ?? []
        let response = await answer(request, body: body, tokens: tokens, harmony: harmony)
        guard recordRequests else { return response }
        let code = (try? JSONParser.parse(response.body.readableBytesView))?["code"]?.stringValue ?? ""
        state.withLock {
            $0.received.append(
                Received(
                    path: request.path, headers: request.headers, body: body, status: Int(response.status.code), code: code, tokens: tokens)
            )
        }
        return response
    }

    private func answer(_ request: ServerRequest, body: JSONValue?, tokens: [String], harmony: Bool) async -> ServerResponse {
        let bearer = request.headers.first(name: "Authorization") ?? ""
        guard bearer.hasPrefix("Bearer ") else { return Self.answer(401, "80200001", "Missing Authorization") }
        let credential = String(bearer.dropFirst(7))
        if harmony {
            if let problem = jwtProblem(credential) {
                state.withLock { $0.problems.append(problem) }
                return Self.answer(401, problem == "expired" ? "80200005" : "80200001", "JWT: \(problem)")
            }
            if credentialRefusals.isRefused(credential) { return Self.answer(401, "80200005", "JWT expired") }
            guard let type = request.headers.first(name: "push-type"), ["0", "1", "2", "6", "7", "10"].contains(type) else {
                return Self.answer(400, "80100001", "push-type header missing or invalid")
            }
        } else {
            let valid = state.withLock { $0.issued[credential].map { $0 > Date() } ?? false }
            guard valid, !credentialRefusals.isRefused(credential) else { return Self.answer(401, "80200003", "Oauth Token expired") }
        }
        guard !tokens.isEmpty, tokens.count <= 1000 else { return Self.answer(400, "80300010", "token count must be 1 to 1000") }
        let pushType = request.headers.first(name: "push-type") ?? ""
        if let problem = harmony ? harmonyBodyProblem(body, pushType: pushType) : androidBodyProblem(body) {
            return Self.answer(400, "80100003", problem)
        }
        if Self.countedBytes(body) > 4096 { return Self.answer(400, "80300008", "message body too large") }

        var refused: [String: String] = [:]
        for token in tokens {
            let (behavior, index) = behavior(for: token)
            switch await resolve(behavior, index) {
            case .accept: continue
            case .invalidToken: refused[token] = harmony ? "tokenFormatError" : "illegal"
            case .noRight: refused[token] = harmony ? "noRight" : "illegal"
            case .answer(let status, let code): return Self.answer(status, code, "scripted")
            case .sequence, .delay: continue
            }
        }
        if refused.isEmpty { return Self.answer(200, "80000000", "Success") }
        var detail: JSONObject = ["success": .int(Int64(tokens.count - refused.count)), "failure": .int(Int64(refused.count))]
        if harmony {
            var byReason: JSONObject = [:]
            for (token, reason) in refused.sorted(by: { $0.key < $1.key }) {
                byReason[reason] = .array((byReason[reason]?.arrayValue ?? []) + [.string(token)])
            }
            detail["illegalTokens"] = .object(byReason)
        } else {
            detail["illegal_tokens"] = .array(refused.keys.sorted().map(JSONValue.string))
        }
        let all = refused.count == tokens.count
        return Self.answer(all ? 400 : 200, all ? "80300007" : "80100000", JSONWriter.string(.object(detail)))
    }

    private func behavior(for token: String) -> (Behavior, Int) {
        state.withLock { s in
            let n = s.served[token, default: 0]
            s.served[token] = n + 1
            return (s.behaviors[token] ?? .accept, n)
        }
    }

    private func resolve(_ behavior: Behavior, _ index: Int) async -> Behavior {
        switch behavior {
        case .sequence(let list):
            guard let last = list.last else { return .accept }
            return await resolve(index < list.count ? list[index] : last, 0)
        case .delay(let duration, let then):
            try? await Task.sleep(for: duration)
            return await resolve(then, index)
        default:
            return behavior
        }
    }

    /// What is wrong with a HarmonyOS bearer JWT, nil when it is right.
    private func jwtProblem(_ token: String) -> String? {
        guard let parts = JWT.decode(token) else { return "not a JWT" }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: parts.signature)
        guard publicKey.isValidSignature(signature, for: SHA256.hash(data: Data(parts.signingInput.utf8)), padding: .PSS) else {
            return "PS256 signature"
        }
        if parts.header["alg"] != "PS256" { return "alg" }
        if parts.header["kid"]?.stringValue != keyId { return "kid" }
        if parts.claims["iss"]?.stringValue != subAccount { return "iss" }
        if parts.claims["aud"]?.stringValue != tokenURL { return "aud" }
        let iat = parts.claims["iat"]?.pythonInt ?? 0
        let exp = parts.claims["exp"]?.pythonInt ?? 0
        if exp - iat > 86_400 { return "lifetime" }
        if Double(exp) < Date().timeIntervalSince1970 { return "expired" }
        return nil
    }

    private func androidBodyProblem(_ body: JSONValue?) -> String? {
        guard let message = body?["message"]?.objectValue else { return "message missing" }
        if let data = message["data"], data.stringValue == nil { return "message.data must be a string" }
        if let android = message["android"]?.objectValue {
            if let urgency = android["urgency"]?.stringValue, !["HIGH", "NORMAL"].contains(urgency) { return "android.urgency" }
            if let ttl = android["ttl"], ttl.stringValue == nil { return "android.ttl must be a string" }
        }
        return nil
    }

    /// What Push Kit refuses in a HarmonyOS body of `pushType`: each scenario has its payload
    /// object (an alert's `notification`, an extension message's `notification` and `extraData`,
    /// a background message's `extraData` alone).
    private func harmonyBodyProblem(_ body: JSONValue?, pushType: String) -> String? {
        guard let payload = body?["payload"]?.objectValue else { return "payload missing" }
        let needsNotification = pushType == "0" || pushType == "2"
        let needsExtraData = pushType == "2" || pushType == "6"
        if let notification = payload["notification"]?.objectValue {
            guard needsNotification else { return "payload.notification is not allowed for push-type \(pushType)" }
            for key in ["category", "title", "body"] where notification[key]?.stringValue?.isEmpty ?? true {
                return "payload.notification.\(key) is required"
            }
            guard notification["clickAction"]?["actionType"] != nil else { return "payload.notification.clickAction is required" }
        } else if needsNotification {
            return "payload.notification is required for push-type \(pushType)"
        }
        if let extra = payload["extraData"] {
            guard extra.stringValue != nil else { return "payload.extraData must be a string" }
        } else if needsExtraData {
            return "payload.extraData is required for push-type \(pushType)"
        }
        return nil
    }

    /// The body's size without its tokens, as Huawei counts it.
    static func countedBytes(_ body: JSONValue?) -> Int {
        guard case .object(var top)? = body else { return 0 }
        if case .object(var message)? = top["message"] {
            message["token"] = .array([])
            top["message"] = .object(message)
        }
        if top["target"] != nil { top["target"] = ["token": .array([])] }
        return JSONWriter.serialize(.object(top)).count
    }

    static func answer(_ status: Int, _ code: String, _ message: String) -> ServerResponse {
        .json(
            HTTPResponseStatus(statusCode: status),
            ["code": .string(code), "msg": .string(message), "requestId": .string("fake-\(UUID().uuidString.prefix(12))")])
    }
}
