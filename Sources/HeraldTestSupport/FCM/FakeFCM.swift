import Crypto
import Foundation
import Gateway
package import HeraldCore
package import HeraldHTTPServer
import Logging
import NIOCore
package import NIOHTTP1
import Pushkins
import Synchronization
import _CryptoExtras

/// A fake Firebase Cloud Messaging: the OAuth token endpoint (checks the service account's RS256
/// JWT bearer grant and issues expiring tokens), the HTTP v1 send endpoint (checks the bearer
/// token and validates messages as FCM does, answering with FCM's error bodies) and the legacy
/// endpoint (per-result errors). Scriptable per registration token.
package final class FakeFCM: HTTPHandler, Sendable {
    package indirect enum Behavior: Sendable {
        case accept
        /// 404 UNREGISTERED (v1) / `NotRegistered` result (legacy).
        case unregistered
        /// 400 INVALID_ARGUMENT about the registration token (v1) / `InvalidRegistration` (legacy).
        case invalidToken
        /// 429 QUOTA_EXCEEDED with an optional Retry-After.
        case quotaExceeded(retryAfter: String?)
        /// 503 UNAVAILABLE with an optional Retry-After (v1) / `Unavailable` result (legacy).
        case unavailable(retryAfter: String?)
        case sequence([Behavior])
        case delay(Duration, then: Behavior)
        /// Hold the answer until the test raises `event` (what a test waits on instead of time).
        case hold(TestEvent, then: Behavior)
    }

    package struct Received: Sendable {
        package let path: String
        package let headers: HTTPHeaders
        package let body: JSONValue?
        package let status: Int
        /// `message.token` or `message.fid` (v1), or the legacy `to` / `registration_ids`.
        package let tokens: [String]
        /// v1: the member that named the device, `token` or `fid` (nil for legacy or neither).
        package var target: String? = nil
    }

    private struct State {
        var behaviors: [String: Behavior] = [:]
        var served: [String: Int] = [:]
        var received: [Received] = []
        var issued: [String: Date] = [:]
        var tokenRequests = 0
        var tokenProblems: [String] = []
    }

    package let projectId: String
    package let legacyAPIKey: String
    package let serviceAccountFile: String
    package let clientEmail = "herald-test@herald-test.iam.gserviceaccount.com"
    private let publicKey: _RSA.Signing.PublicKey
    private let tokenLifetime: Int
    private let state = Mutex(State())
    /// OAuth access tokens to refuse with 401 (`refuseCredentials`).
    package let credentialRefusals = CredentialRefusals()
    package let server: HTTPServer
    private let serveTask = Mutex<Task<Void, Never>?>(nil)
    package var baseURL: String { "http://127.0.0.1:\(server.port)" }

    /// The service accounts' RSA key, made once per process: making a 2048-bit key takes long
    /// enough (a debug build's BoringSSL in particular) to slow the tests running beside it.
    private static let accountKey: Result<_RSA.Signing.PrivateKey, any Error> = Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    /// Starts on 127.0.0.1 and writes a service-account file into `directory`.
    package static func start(
        directory: String, projectId: String = "herald-test", tokenLifetime: Int = 3600, port: Int = 0, recordRequests: Bool = true
    ) async throws -> FakeFCM {
        let box = HandlerBox<FakeFCM>()
        let server = try await HTTPServer.bind(
            host: "127.0.0.1", port: port, handler: box, logger: Logger(label: "fake-fcm"), clock: SystemClock())
        let key = try accountKey.get()
        let file = "\(directory)/service-account-\(UUID().uuidString.prefix(8)).json"
        let fake = FakeFCM(
            server: server, projectId: projectId, publicKey: key.publicKey, serviceAccountFile: file, tokenLifetime: tokenLifetime,
            recordRequests: recordRequests)
        let account: JSONValue = [
            "type": "service_account", "project_id": .string(projectId), "private_key_id": "0123456789abcdef",
            "private_key": .string(key.pkcs8PEMRepresentation), "client_email": .string(fake.clientEmail),
            "token_uri": .string("\(fake.baseURL)/token"),
        ]
        try JSONWriter.string(account).write(toFile: file, atomically: true, encoding: .utf8)
        box.set(fake)
        fake.serveTask.withLock { $0 = Task { await server.serve() } }
        return fake
    }

    private let recordRequests: Bool

    private init(
        server: HTTPServer, projectId: String, publicKey: _RSA.Signing.PublicKey, serviceAccountFile: String, tokenLifetime: Int,
        recordRequests: Bool
    ) {
        self.recordRequests = recordRequests
        self.server = server
        self.projectId = projectId
        self.publicKey = publicKey
        self.serviceAccountFile = serviceAccountFile
        self.tokenLifetime = tokenLifetime
        self.legacyAPIKey = "legacy-key-\(UUID().uuidString.prefix(8))"
    }

    package func stop() async {
        await server.shutdown()
        await serveTask.withLock { $0 }?.value
    }

    /// The next `count` distinct access tokens shown are refused (401 `UNAUTHENTICATED`), for good.
    package func refuseCredentials(_ count: Int = 1) { credentialRefusals.refuse(count) }

    package func script(_ token: String, _ behavior: Behavior) {
        state.withLock {
            $0.behaviors[token] = behavior
            $0.served[token] = 0
        }
    }

    /// Invalidates every access token issued so far (the next send gets 401).
    package func revokeAccessTokens() { state.withLock { $0.issued.removeAll() } }

    package var received: [Received] { state.withLock { $0.received } }
    /// How many requests for `token` arrived since it was last scripted, answered or not (a held
    /// one counts at once).
    package func arrived(token: String) -> Int { state.withLock { $0.served[token, default: 0] } }
    package var tokenRequests: Int { state.withLock { $0.tokenRequests } }
    package var tokenProblems: [String] { state.withLock { $0.tokenProblems } }

    package func handle(_ request: ServerRequest) async -> ServerResponse {
        let path = request.path
        if path == "/token" { return issueToken(request) }
        if path == "/v1/projects/\(projectId)/messages:send" { return await sendV1(request) }
        if path == "/fcm/send" { return await sendLegacy(request) }
        return ServerResponse(status: .notFound)
    }

    // MARK: OAuth

    private func issueToken(_ request: ServerRequest) -> ServerResponse {
        var form: [String: String] = [:]
        for pair in String(buffer: request.body).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        var problems: [String] = []
        if form["grant_type"] != "urn:ietf:params:oauth:grant-type:jwt-bearer" { problems.append("grant_type") }
        if let assertion = form["assertion"], let parts = JWT.decode(assertion),
            case let signature = _RSA.Signing.RSASignature(rawRepresentation: parts.signature),
            publicKey.isValidSignature(signature, for: Data(parts.signingInput.utf8), padding: .insecurePKCS1v1_5)
        {
            if parts.header["alg"] != "RS256" { problems.append("alg") }
            if parts.claims["iss"]?.stringValue != clientEmail { problems.append("iss") }
            if parts.claims["aud"]?.stringValue != "\(baseURL)/token" { problems.append("aud") }
            if parts.claims["scope"]?.stringValue?.contains(GoogleServiceAccount.messagingScope) != true { problems.append("scope") }
            let iat = parts.claims["iat"]?.pythonInt ?? 0
            let exp = parts.claims["exp"]?.pythonInt ?? 0
            if exp - iat > 3600 || Double(exp) < Date().timeIntervalSince1970 { problems.append("exp") }
        } else {
            problems.append("assertion signature")
        }
        let token = "ya29.fake-\(UUID().uuidString)"
        state.withLock {
            $0.tokenRequests += 1
            $0.tokenProblems.append(contentsOf: problems)
            if problems.isEmpty { $0.issued[token] = Date().addingTimeInterval(Double(tokenLifetime)) }
        }
        guard problems.isEmpty else {
            return .json(.badRequest, ["error": "invalid_grant", "error_description": .string(problems.joined(separator: ", "))])
        }
        return .json(.ok, ["access_token": .string(token), "expires_in": .int(Int64(tokenLifetime)), "token_type": "Bearer"])
    }

    // MARK: HTTP v1

    /// A message names its device by `token` (a registration token) or `fid` (a Firebase
    /// installation id: 22 characters of base64url), one of them.
    private func sendV1(_ request: ServerRequest) async -> ServerResponse {
        let body = try? JSONParser.parse(request.body.readableBytesView)
        let token = body?["message"]?["token"]?.stringValue
        let fid = body?["message"]?["fid"]?.stringValue
        let target = token != nil ? "token" : fid != nil ? "fid" : nil
        let response: ServerResponse
        if token != nil && fid != nil {
            response = Self.error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", code: "INVALID_ARGUMENT")
        } else if let token, Self.isInstallationId(token) {
            response = Self.error(
                400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", code: "INVALID_ARGUMENT",
                field: "message.token", description: "Invalid registration token")
        } else if let fid, !Self.isInstallationId(fid) {
            response = Self.error(
                400, "INVALID_ARGUMENT", "The installation id is not a valid Firebase installation id", code: "INVALID_ARGUMENT",
                field: "message.fid", description: "Invalid installation id")
        } else {
            response = await v1Response(request, body: body, token: token ?? fid ?? "")
        }
        record(request, body: body, status: Int(response.status.code), tokens: [token ?? fid ?? ""], target: target)
        return response
    }

    /// What Firebase issues as an installation id: 22 characters of base64url.
    static func isInstallationId(_ value: String) -> Bool {
        value.count == 22 && value.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }

    private func v1Response(_ request: ServerRequest, body: JSONValue?, token: String) async -> ServerResponse {
        let bearer = request.headers.first(name: "Authorization") ?? ""
        let valid = state.withLock { s -> Bool in
            guard bearer.hasPrefix("Bearer "), let expiry = s.issued[String(bearer.dropFirst(7))] else { return false }
            return expiry > Date()
        }
        guard valid, !credentialRefusals.isRefused(String(bearer.dropFirst(7))) else {
            return Self.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", code: nil)
        }
        guard let message = body?["message"]?.objectValue, !token.isEmpty else {
            return Self.error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", code: "INVALID_ARGUMENT")
        }
        if case .object(let data)? = message["data"] {
            for (index, (key, value)) in data.enumerated() where value.stringValue == nil {
                return Self.error(
                    400, "INVALID_ARGUMENT",
                    "Invalid value at 'message.data[\(index)].value' (TYPE_STRING), \(JSONWriter.string(value))", code: nil,
                    field: "message.data[\(index)].value", description: "Invalid value for \(key)")
            }
        }
        if request.body.readableBytes > 4096 + 512 {
            return Self.error(400, "INVALID_ARGUMENT", "Message is too big", code: "INVALID_ARGUMENT")
        }
        return await perform(behavior(for: token), legacy: false)
    }

    private func behavior(for token: String) -> (Behavior, Int) {
        state.withLock { s in
            let n = s.served[token, default: 0]
            s.served[token] = n + 1
            return (s.behaviors[token] ?? .accept, n)
        }
    }

    private func perform(_ scripted: (Behavior, Int), legacy: Bool) async -> ServerResponse {
        let (behavior, index) = scripted
        switch behavior {
        case .accept:
            return .json(.ok, ["name": .string("projects/\(projectId)/messages/\(UUID().uuidString)")])
        case .unregistered:
            return Self.error(404, "NOT_FOUND", "Requested entity was not found.", code: "UNREGISTERED")
        case .invalidToken:
            return Self.error(
                400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", code: "INVALID_ARGUMENT",
                field: "message.token", description: "Invalid registration token")
        case .quotaExceeded(let retryAfter):
            var response = Self.error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", code: "QUOTA_EXCEEDED")
            if let retryAfter { response.headers.add(name: "Retry-After", value: retryAfter) }
            return response
        case .unavailable(let retryAfter):
            var response = Self.error(503, "UNAVAILABLE", "The service is currently unavailable.", code: "UNAVAILABLE")
            if let retryAfter { response.headers.add(name: "Retry-After", value: retryAfter) }
            return response
        case .sequence(let list):
            guard let last = list.last else { return await perform((.accept, 0), legacy: legacy) }
            return await perform((index < list.count ? list[index] : last, 0), legacy: legacy)
        case .delay(let duration, let then):
            try? await Task.sleep(for: duration)
            return await perform((then, index), legacy: legacy)
        case .hold(let event, let then):
            await event.wait()
            return await perform((then, index), legacy: legacy)
        }
    }

    static func error(
        _ code: Int, _ status: String, _ message: String, code errorCode: String?, field: String? = nil, description: String? = nil
    )
        -> ServerResponse
    {
        var details: [JSONValue] = []
        if let errorCode {
            details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(errorCode)])
        }
        if let field {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": .string(field), "description": .string(description ?? "")]],
            ])
        }
        return .json(
            HTTPResponseStatus(statusCode: code),
            ["error": ["code": .int(Int64(code)), "message": .string(message), "status": .string(status), "details": .array(details)]])
    }

    // MARK: legacy

    private func sendLegacy(_ request: ServerRequest) async -> ServerResponse {
        let body = try? JSONParser.parse(request.body.readableBytesView)
        var tokens: [String] = []
        if let to = body?["to"]?.stringValue { tokens = [to] }
        if let ids = body?["registration_ids"]?.arrayValue { tokens = ids.compactMap(\.stringValue) }
        let response: ServerResponse
        if request.headers.first(name: "Authorization") != "key=\(legacyAPIKey)" {
            response = ServerResponse(status: .unauthorized)
        } else if body?["to"] != nil && body?["registration_ids"] != nil {
            response = ServerResponse(status: .badRequest, body: ByteBuffer(string: "to and registration_ids are exclusive"))
        } else if tokens.isEmpty || tokens.count > 1000 {
            response = ServerResponse(status: .badRequest, body: ByteBuffer(string: "Number of messages must be between 1 and 1000"))
        } else {
            var results: [JSONValue] = []
            var worst: ServerResponse?
            for token in tokens {
                let answer = await perform(behavior(for: token), legacy: true)
                switch answer.status.code {
                case 200: results.append(["message_id": .string("0:\(UUID().uuidString)")])
                case 404: results.append(["error": "NotRegistered"])
                case 400: results.append(["error": "InvalidRegistration"])
                case 429: worst = answer
                default: results.append(["error": "Unavailable"])
                }
            }
            if let worst {
                response = ServerResponse(status: worst.status, headers: worst.headers)
            } else {
                let failures = results.filter { $0["error"] != nil }.count
                response = .json(
                    .ok,
                    [
                        "multicast_id": 1, "success": .int(Int64(results.count - failures)), "failure": .int(Int64(failures)),
                        "canonical_ids": 0, "results": .array(results),
                    ])
            }
        }
        record(request, body: body, status: Int(response.status.code), tokens: tokens)
        return response
    }

    private func record(_ request: ServerRequest, body: JSONValue?, status: Int, tokens: [String], target: String? = nil) {
        guard recordRequests else { return }
        state.withLock {
            $0.received.append(
                Received(path: request.path, headers: request.headers, body: body, status: status, tokens: tokens, target: target))
        }
    }
}
