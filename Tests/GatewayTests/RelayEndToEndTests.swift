import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import NIOCore
import NIOHTTP1
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// The Web Push → APNs relay through real sockets: a sender → Herald → the fake APNs of each
/// environment; the test then decodes and decrypts what the device would get
/// (docs/webpush-relay.md).
@Suite struct RelayEndToEndTests {
    static let topic = "cx.c3.toot"
    /// RFC 8291 Appendix A: the subscriber's key and auth secret, which the vectors were made for.
    static let receiver = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    struct Setup {
        let herald: RunningGateway
        let production: FakeAPNs
        let development: FakeAPNs
        var relayPort: Int { herald.gateway.ports[1] }

        func stop() async {
            await herald.stop()
            await production.stop()
            await development.stop()
        }

        func send(
            _ path: String, headers: [String: String] = [:], body: [UInt8] = [], method: HTTPMethod = .POST, port: Int? = nil
        ) async throws -> TestResponse {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port ?? herald.gateway.ports[0])\(path)")
            request.method = method
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if !body.isEmpty { request.body = .bytes(ByteBuffer(bytes: body)) }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            let collected = try await response.body.collect(upTo: 1 << 20)
            return TestResponse(status: Int(response.status.code), headers: response.headers, body: Array(collected.readableBytesView))
        }
    }

    func start(
        relayExtra: String = "", developmentURL: String? = nil, top: String = "", clock: any HeraldClock = SystemClock()
    ) async throws -> Setup {
        let dir = temporaryDirectory()
        let pki = try TestPKI(directory: dir)
        let auth = try APNsTestKey(directory: dir).auth
        let production = try await FakeAPNs.start(pki: pki, topic: Self.topic, auth: auth)
        let development = try await FakeAPNs.start(pki: pki, topic: Self.topic, auth: auth)
        let apps = """
              com.example.ios:
                type: apns
                keyfile: \(dir)/AuthKey.p8
                key_id: ABC123DEFG
                team_id: TEAM123456
                topic: com.example.ios
                base_url: \(production.baseURL)
                tls_ca_file: \(pki.caFile)
                max_attempts: 2
                retry_initial_backoff: 0.01
                retry_max_backoff: 0.02

            """
        let relay = """
            relay:
              apns_app: com.example.ios
              topic: \(Self.topic)
              production_base_url: \(production.baseURL)
              development_base_url: \(developmentURL ?? development.baseURL)
              port: 0
            \(relayExtra.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            """
        let herald = try await RunningGateway.start(gatewayYAML(apps: apps, extra: top + relay), clock: clock)
        return Setup(herald: herald, production: production, development: development)
    }

    static func vector(_ name: String) throws -> (headers: [String: String], body: [UInt8], plaintext: String, apnsBody: String) {
        let vectors = try fixture("relay/toot_relay_vectors")
        let vector = try #require(vectors[name])
        var headers: [String: String] = [:]
        for (key, value) in vector["request_headers"]?.objectValue ?? [:] { headers[key] = value.stringValue }
        let encoded = try #require(vector["body_b64url"]?.stringValue)
        return (
            headers, try #require(Base64URL.decode(encoded)), try #require(vector["plaintext"]?.stringValue),
            try #require(vector["apns_body"]?.stringValue)
        )
    }

    static let token = "c0ffee" + String(repeating: "0", count: 58)

    @Test func aMastodonAesgcmMessageReachesTheDeviceAndDecrypts() async throws {
        let setup = try await start()
        let (headers, body, plaintext, apnsBody) = try Self.vector("aesgcm")
        let sent = Date()
        let response = try await setup.send("/relay-to/production/\(Self.token)/acct-42", headers: headers, body: body)
        let answered = Date()
        let metrics = try await setup.herald.metricsText()
        let trace = try await setup.herald.deliveries(pushkey: Self.token)
        await setup.stop()

        // Answerable by the device token: under the request's id, with APNs's id for it.
        #expect(trace.count == 1 && trace.first?["front_end"] == "relay" && trace.first?["outcome"] == "delivered")
        #expect(trace.first?["event_id"]?.stringValue == response.headers.first(name: "X-Request-Id"))
        #expect(trace.first?["provider_id"]?.stringValue == setup.production.received.first?.headers["apns-id"])

        #expect(response.status == 201)
        #expect(response.headers.first(name: "Location")?.hasPrefix("https://not-supported/") == true)
        let received = try #require(setup.production.received.first)
        #expect(setup.production.received.count == 1)
        #expect(setup.development.received.isEmpty)
        #expect(received.token == Self.token)
        #expect(String(decoding: received.body, as: UTF8.self) == apnsBody)  // toot-relay's bytes
        #expect(received.headers["apns-topic"] == Self.topic)
        #expect(received.headers["apns-push-type"] == "alert")
        #expect(received.headers["apns-priority"] == "10")
        #expect(received.headers["apns-collapse-id"] == nil)
        #expect(received.headers["apns-id"] == response.headers.first(name: "Location")?.components(separatedBy: "/").last)
        let expiration = try #require(received.headers["apns-expiration"].flatMap(Int.init))
        // 48 hours from when Herald sent it: between the request and its answer, however slow the machine.
        #expect(expiration >= Int(sent.timeIntervalSince1970) + 172_800)
        #expect(expiration <= Int(answered.timeIntervalSince1970) + 172_800)

        // What the app's notification extension does: decode p, k, s and decrypt.
        let payload = try #require(received.payload)
        #expect(payload["aps"] == ["alert": "🎺", "content-available": 1, "mutable-content": 1])
        #expect(payload["x"] == "acct-42")
        let p = try #require(payload["p"]?.stringValue.flatMap(ExtendedZ85.decode))
        let k = try #require(payload["k"]?.stringValue.flatMap(ExtendedZ85.decode))
        let s = try #require(payload["s"]?.stringValue.flatMap(ExtendedZ85.decode))
        let receiver = try P256.KeyAgreement.PrivateKey(rawRepresentation: try #require(Base64URL.decode(Self.receiver)))
        let decrypted = try LegacyWebPushDecryption.decrypt(
            p, senderKey: k, salt: s, receiver: receiver, authSecret: try #require(Base64URL.decode(Self.auth)))
        #expect(String(decoding: decrypted, as: UTF8.self) == plaintext)
        #expect(metrics.contains(#"herald_relay_requests_total{result="accepted"} 1"#))
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="com.example.ios",outcome="delivered",reason=""} 1"#))
    }

    @Test func anAes128gcmMessageForADevelopmentBuildGoesToTheDevelopmentHostOnTheRelaysOwnPort() async throws {
        let setup = try await start()
        let (headers, body, plaintext, apnsBody) = try Self.vector("aes128gcm")
        let response = try await setup.send(
            "/relay-to/development/\(Self.token)/acct-42", headers: headers.merging(["Urgency": "low", "Topic": "thread-7"]) { $1 },
            body: body, port: setup.relayPort)
        let notifyOnRelayPort = try await setup.send("/_matrix/push/v1/notify", body: Array("{}".utf8), port: setup.relayPort)
        await setup.stop()

        #expect(response.status == 201)
        #expect(setup.production.received.isEmpty)
        let received = try #require(setup.development.received.first)
        #expect(received.headers["apns-priority"] == "5")
        #expect(received.headers["apns-collapse-id"] == "thread-7")
        var expected = try #require(try JSONParser.parse(Array(apnsBody.utf8)).objectValue)
        expected["x"] = "acct-42"
        #expect(try #require(received.payload).semanticallyEquals(.object(expected)))
        let p = try #require(received.payload?["p"]?.stringValue.flatMap(ExtendedZ85.decode))
        let receiver = try P256.KeyAgreement.PrivateKey(rawRepresentation: try #require(Base64URL.decode(Self.receiver)))
        let decrypted = try WebPushEncryption.decrypt(p, uaPrivate: receiver, authSecret: try #require(Base64URL.decode(Self.auth)))
        #expect(String(decoding: decrypted, as: UTF8.self) == plaintext)
        #expect(notifyOnRelayPort.status == 404)  // the relay's own port serves only the relay
    }

    /// The relay's own port answers in the relay's dialect even before a route is known: a request
    /// the parser cannot read, and an unknown path, are plain text as toot-relay's, not Matrix JSON.
    @Test func theRelaysOwnPortAnswersItsConnectionErrorsInPlainText() async throws {
        let setup = try await start()
        let malformed = await RawHTTP.exchangeOffPool(port: setup.relayPort, head: "NOT HTTP AT ALL\r\n\r\n")
        let unknown = await RawHTTP.exchangeOffPool(
            port: setup.relayPort, head: "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let malformedOnMain = await RawHTTP.exchangeOffPool(port: setup.herald.gateway.ports[0], head: "NOT HTTP AT ALL\r\n\r\n")
        await setup.stop()
        #expect(malformed.hasPrefix("HTTP/1.1 400"))
        #expect(malformed.contains("text/plain"))
        #expect(malformed.hasSuffix("\r\n\r\nMalformed HTTP request\n"))
        #expect(unknown.hasPrefix("HTTP/1.1 404") && unknown.contains("text/plain"))
        #expect(malformedOnMain.hasPrefix("HTTP/1.1 400") && malformedOnMain.contains(#""errcode":"M_UNRECOGNIZED""#))
    }

    @Test(arguments: [
        (410, "Unregistered", 410), (400, "BadDeviceToken", 410), (400, "DeviceTokenNotForTopic", 410), (400, "TopicDisallowed", 502),
        (400, "BadTopic", 502), (403, "InvalidProviderToken", 502), (503, "ServiceUnavailable", 503), (429, "TooManyRequests", 429),
        (413, "PayloadTooLarge", 413),
    ])
    func apnsAnswersBecomeWhatASenderShouldDo(_ apnsStatus: Int, _ reason: String, _ expected: Int) async throws {
        let setup = try await start()
        setup.production.script(Self.token, .fail(apnsStatus, reason))
        let (headers, body, _, _) = try Self.vector("aesgcm")
        let response = try await setup.send("/relay-to/production/\(Self.token)", headers: headers, body: body)
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(response.status == expected)
        #expect(response.headers.first(name: "Content-Type") == "text/plain; charset=utf-8")
        #expect(response.text.hasSuffix("\n"))
        if expected == 429 || expected == 503 { #expect(response.headers.first(name: "Retry-After") == "30") }
        // A throttled token is asked once: a retry within the request would only add to Apple's throttling.
        if apnsStatus == 429 { #expect(setup.production.received.count == 1) }
        let label = ["410": "gone", "502": "upstream_refused", "503": "upstream_unavailable", "429": "rate_limited", "413": "too_large"]
        #expect(metrics.contains(#"herald_relay_requests_total{result="\#(label["\(expected)"] ?? "")"} 1"#))
    }

    @Test func anUnreachableAPNsIs503WithRetryAfterNotA4xx() async throws {
        let setup = try await start(developmentURL: "https://127.0.0.1:1")
        let (headers, body, _, _) = try Self.vector("aesgcm")
        let response = try await setup.send("/relay-to/development/\(Self.token)", headers: headers, body: body)
        let health = try await setup.send("/relay-to/_health", method: .GET)
        await setup.stop()
        #expect(response.status == 503)
        #expect(response.headers.first(name: "Retry-After") == "30")
        #expect(response.text == "APNs is unavailable; retry later\n")  // no address or port detail for the sender
        #expect(health.status == 200)
    }

    @Test func malformedRequestsGetTheirErrorAndNoUpstreamCall() async throws {
        let setup = try await start()
        let (headers, body, _, _) = try Self.vector("aesgcm")
        let path = "/relay-to/production/\(Self.token)"
        var noSalt = headers
        noSalt["Encryption"] = nil
        let unsupported = try await setup.send(path, headers: headers.merging(["Content-Encoding": "gzip"]) { $1 }, body: body)
        let missingSalt = try await setup.send(path, headers: noSalt, body: body)
        let broken = try await setup.send(path, headers: headers.merging(["Crypto-Key": "dh;p256ecdsa"]) { $1 }, body: body)
        let badToken = try await setup.send("/relay-to/production/not-hex", headers: headers, body: body)
        let badEnvironment = try await setup.send("/relay-to/staging/\(Self.token)", headers: headers, body: body)
        let get = try await setup.send(path, method: .GET)
        let huge = try await setup.send(path, headers: headers, body: [UInt8](repeating: 1, count: 5000))
        let tooLargeForAPNs = try await setup.send(path, headers: headers, body: [UInt8](repeating: 1, count: 3500))
        let health = try await setup.send("/relay-to/_health", method: .GET)
        await setup.stop()

        #expect(unsupported.status == 415)
        #expect(unsupported.text == "Unsupported Content-Encoding: gzip (aesgcm or aes128gcm)\n")
        #expect(missingSalt.status == 400)
        #expect(missingSalt.text == "Encryption has no salt parameter\n")
        #expect(broken.status == 400)
        #expect(badToken.status == 400)
        #expect(badEnvironment.status == 404)
        #expect(get.status == 405)
        #expect(huge.status == 413)
        #expect(tooLargeForAPNs.status == 413)
        #expect(tooLargeForAPNs.text == "The message does not fit in an APNs payload of 4096 bytes\n")
        #expect(health.status == 200)
        #expect(setup.production.received.isEmpty)
    }

    @Test func eachDeviceTokenIsRateLimitedAndUnsubscribeURLsAreNeverFetched() async throws {
        let setup = try await start(relayExtra: "rate_limit_per_minute: 1\nrate_limit_burst: 2")
        let watcher = try await FakeUnifiedPushDistributor.start()
        let (headers, body, _, _) = try Self.vector("aesgcm")
        var withUnsubscribe = headers
        withUnsubscribe["Unsubscribe-URL"] = watcher.endpoint("unsubscribe")
        setup.production.script(Self.token, .fail(410, "Unregistered"))
        var statuses: [Int] = []
        for _ in 0..<3 {
            statuses.append(try await setup.send("/relay-to/production/\(Self.token)", headers: withUnsubscribe, body: body).status)
        }
        let other = try await setup.send("/relay-to/production/\(String(repeating: "e", count: 64))", headers: headers, body: body)
        await setup.stop()
        await watcher.stop()
        #expect(statuses == [410, 410, 429])
        #expect(other.status == 201)
        #expect(watcher.received.isEmpty)
    }
    /// MSC4174's iOS path: a homeserver with a Web Push pusher (`data.url` the relay URL the app
    /// subscribed with, `data.auth`, the pushkey its P-256 key) sends RFC 8030 requests itself:
    /// `aes128gcm` only, `TTL: 172800`, `Urgency: high` for `prio: high`, and a VAPID
    /// `Authorization` signed by its own key. First the validation push `{"app_id", "ack_token"}`
    /// right after the pusher is set, then a message: both reach the device still encrypted, and
    /// decrypt to what the homeserver sent. A dead device is 410 (the homeserver deletes the
    /// pusher); past the token's rate, 429 with `Retry-After`, which MSC4174 says it must respect.
    @Test func aHomeserverWithAWebPushPusherReachesTheIOSAppThroughTheRelay() async throws {
        let setup = try await start(relayExtra: "rate_limit_per_minute: 1\nrate_limit_burst: 2")
        let phone = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let homeserver = VAPIDSigner(key: P256.Signing.PrivateKey(), contactEmail: "admin@matrix.example.org")
        let token = String(repeating: "ab", count: 32)
        let dead = String(repeating: "cd", count: 32)
        setup.production.script(dead, .fail(410, "Unregistered"))
        let origin = "http://127.0.0.1:\(setup.herald.gateway.ports[0])"

        func push(_ plaintext: String, to device: String, urgency: String) async throws -> TestResponse {
            let body = try WebPushEncryption.encrypt(
                Array(plaintext.utf8), p256dh: Array(phone.publicKey.x963Representation), authSecret: auth)
            return try await setup.send(
                "/relay-to/production/\(device)",
                headers: [
                    "Content-Encoding": "aes128gcm", "Content-Type": "application/octet-stream", "TTL": "172800",
                    "Urgency": urgency, "Authorization": try homeserver.authorization(origin: origin, now: Date()),
                ], body: body)
        }
        let validation = #"{"app_id":"org.example.ios","ack_token":"3b1c0f"}"#
        let message = #"{"event_id":"$ev","room_id":"!r:example.org","prio":"high","counts":{"unread":1}}"#
        let sent = Date()
        let acknowledged = try await push(validation, to: token, urgency: "normal")
        let delivered = try await push(message, to: token, urgency: "high")
        let gone = try await push(message, to: dead, urgency: "high")
        let limited = try await push(message, to: token, urgency: "high")
        await setup.stop()

        #expect([acknowledged.status, delivered.status, gone.status] as [Int] == [201, 201, 410])
        #expect(limited.status == 429 && limited.headers.first(name: "Retry-After") == "30")
        let received = setup.production.received(token: token)
        #expect(received.count == 2)
        var decrypted: [String] = []
        for push in received {
            let p = try #require(push.payload?["p"]?.stringValue.flatMap(ExtendedZ85.decode))
            decrypted.append(String(decoding: try WebPushEncryption.decrypt(p, uaPrivate: phone, authSecret: auth), as: UTF8.self))
            #expect(push.payload?["k"] == nil && push.payload?["s"] == nil)  // aes128gcm carries its own key and salt
            let expiration = try #require(push.headers["apns-expiration"].flatMap(Int.init))
            #expect(expiration >= Int(sent.timeIntervalSince1970) + 172_800)
        }
        #expect(decrypted == [validation, message])
        #expect(received.map { $0.headers["apns-priority"] } == ["10", "10"])
    }

    /// Every listener's `/health` is the gateway's: the relay's own port names a delivery record
    /// that fails as the main listener does (it left the record out).
    @Test func theRelaysOwnListenerReportsTheRecordsHealth() async throws {
        // Port 1 refuses the connection: the record's check at start says so, and the record is
        // skipped from the first notify on.
        let clock = ManualClock()
        let setup = try await start(top: "notify:\n  repeat_store: postgres://postgres@127.0.0.1:1/none\n", clock: clock)
        let checked = await eventually { (try? await setup.send("/health", method: .GET))?.text.contains("repeat_store") == true }
        let pushkey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let notify = try await setup.herald.notify(
            notifyBody(["event_id": "$e"], devices: [["app_id": "com.example.ios", "pushkey": .string(pushkey)]]))
        #expect(checked)
        let main = try await setup.send("/health", method: .GET)
        let own = try await setup.send("/health", method: .GET, port: setup.relayPort)
        await setup.stop()
        #expect(notify.status == 200)
        #expect(main.json?["failing"]?["repeat_store"] != nil, "\(main.text)")
        #expect(own.json?["failing"]?["repeat_store"] != nil, "\(own.text)")
    }
}
