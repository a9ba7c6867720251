import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// FCM through real sockets: Herald → the fake FCM (OAuth token endpoint, v1 and legacy).
/// docs/compatibility/fcm.md.
@Suite struct FCMEndToEndTests {
    struct Setup {
        let herald: InMemoryGateway
        let fcm: FakeFCM

        func stop() async {
            await herald.stop()
            await fcm.stop()
        }
    }

    func start(legacy: Bool = false, extra: String = "", tokenLifetime: Int = 3600) async throws -> Setup {
        let dir = temporaryDirectory()
        let fcm = try await FakeFCM.start(directory: dir, tokenLifetime: tokenLifetime)
        let credentials =
            legacy
            ? "api_version: legacy\n    api_key: \(fcm.legacyAPIKey)"
            : "api_version: v1\n    project_id: \(fcm.projectId)\n    service_account_file: \(fcm.serviceAccountFile)"
        let apps = """
              com.example.gcm:
                type: gcm
                \(credentials)
                base_url: \(fcm.baseURL)
                retry_initial_backoff: 0.01
                retry_max_backoff: 0.05
            \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        return Setup(herald: herald, fcm: fcm)
    }

    func device(_ pushkey: String, data: JSONObject = [:]) -> JSONValue {
        ["app_id": "com.example.gcm", "pushkey": .string(pushkey), "data": .object(data)]
    }

    static var message: JSONObject { APNsEndToEndTests.message }

    @Test func sygnalsRecordedV1Request() async throws {
        let setup = try await start()
        let sample = try fixture("sygnal/fcmv1")
        let request = withAppId(try #require(sample["notify_request"]), "com.example.gcm")
        let response = try await setup.herald.notify(request)
        await setup.stop()
        #expect(response.json == ["rejected": []])
        let sent = try #require(setup.fcm.received.first)
        #expect(sent.status == 200)
        let expected = try #require(sample["upstream_requests"]?.arrayValue?.last?["body"])
        #expect(try #require(sent.body).semanticallyEquals(expected))
        #expect(
            sent.body?["message"]?["data"]?.objectValue.map { Array($0.keys) }
                == expected["message"]?["data"]?.objectValue.map { Array($0.keys) })
        #expect(sent.headers.first(name: "Authorization")?.hasPrefix("Bearer ya29.") == true)
        #expect(setup.fcm.tokenProblems == [])
        #expect(setup.fcm.tokenRequests == 1)
    }

    /// A Firebase installation id (22 characters of base64url) is sent as `message.fid`, a
    /// registration token as `message.token`, each through the one v1 writer; FCM's answers about
    /// either map alike (UNREGISTERED rejects the pushkey).
    @Test func anInstallationIdIsSentAsAnFidAndATokenAsAToken() async throws {
        let setup = try await start()
        let fid = "eKmDbRLmQS6q2ye8hyN0gA"
        let deadFid = "c2hvdWxkYmVyZWplY3RlZA"
        let token = "eKmDbRLmQS6q2ye8hyN0gA:APA91bH" + String(repeating: "k", count: 140)
        setup.fcm.script(deadFid, .unregistered)
        let response = try await setup.herald.notify(
            notifyBody(Self.message, devices: [device(fid), device(token), device(deadFid)]))
        let event = Self.message["event_id"]?.stringValue ?? ""
        let fidTrace = try await setup.herald.deliveries(event: event, query: "&pushkey=\(fid)")
        let tokenTrace = try await setup.herald.deliveries(event: event, query: "&pushkey=\(token)")
        await setup.stop()
        #expect(fidTrace.first?["target"] == "fid" && fidTrace.first?["outcome"] == "delivered")
        #expect(tokenTrace.first?["target"] == "token")
        #expect(response.json == ["rejected": [.string(deadFid)]])
        let sent = Dictionary(setup.fcm.received.map { ($0.tokens[0], $0) }) { a, _ in a }
        #expect(sent[fid]?.target == "fid" && sent[fid]?.status == 200)
        #expect(sent[fid]?.body?["message"]?["token"] == nil)
        #expect(sent[token]?.target == "token" && sent[token]?.status == 200)
        #expect(sent[deadFid]?.target == "fid" && sent[deadFid]?.status == 404)
    }

    /// `fcm_target` overrides the guess: `token` sends even an FID-shaped pushkey as a token (and
    /// FCM refuses it as one), `fid` sends every pushkey as an installation id.
    @Test(arguments: ["token", "fid"])
    func fcmTargetOverridesTheGuess(_ target: String) async throws {
        let setup = try await start(extra: "fcm_target: \(target)")
        let fid = "eKmDbRLmQS6q2ye8hyN0gA"
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(fid)]))
        await setup.stop()
        let sent = try #require(setup.fcm.received.first)
        #expect(sent.target == target)
        // FCM's INVALID_ARGUMENT about `message.token` says the pushkey is not a registration token.
        #expect(response.json == (target == "token" ? ["rejected": [.string(fid)]] : ["rejected": []]))
    }

    @Test func sygnalsRecordedLegacyRequest() async throws {
        let setup = try await start(legacy: true)
        let sample = try fixture("sygnal/gcm")
        let request = withAppId(try #require(sample["notify_request"]), "com.example.gcm")
        let response = try await setup.herald.notify(request)
        await setup.stop()
        #expect(response.json == ["rejected": []])
        let sent = try #require(setup.fcm.received.first)
        #expect(try #require(sent.body).semanticallyEquals(try #require(sample["upstream_requests"]?.arrayValue?.last?["body"])))
        #expect(sent.headers.first(name: "Authorization") == "key=\(setup.fcm.legacyAPIKey)")
    }

    @Test func iOSStyleDefaultPayloadIsAcceptedByFCMv1() async throws {
        let setup = try await start()
        let payload: JSONObject = [
            "default_payload": [
                "aps": ["mutable-content": 1, "content-available": 1, "alert": ["loc-key": "SINGLE_UNREAD", "loc-args": []]], "n": 2,
            ]
        ]
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device("tok", data: payload)]))
        await setup.stop()
        #expect(response.status == 200)
        let sent = try #require(setup.fcm.received.first)
        #expect(sent.status == 200)
        #expect(sent.body?["message"]?["data"]?["n"] == "2")
        #expect(sent.body?["message"]?["apns"]?["payload"]?["aps"]?["mutable-content"] == 1)
    }

    @Test(arguments: [false, true])
    func misformedDefaultPayloadIsRejectedWithoutARequest(_ legacy: Bool) async throws {
        let setup = try await start(legacy: legacy)
        let response = try await setup.herald.notify(
            notifyBody(Self.message, devices: [device("badpayload", data: ["default_payload": nil])]))
        await setup.stop()
        #expect(response.json == ["rejected": ["badpayload"]])
        #expect(setup.fcm.received.isEmpty)
    }

    @Test(arguments: [FakeFCM.Behavior.unregistered, .invalidToken])
    func deadTokensAreRejected(_ behavior: FakeFCM.Behavior) async throws {
        let setup = try await start()
        setup.fcm.script("dead", behavior)
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device("dead"), device("alive")]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": ["dead"]])
        #expect(setup.fcm.received.count == 2)  // v1: one request per device
    }

    @Test func quotaIsRetriedHonouringRetryAfterAsSecondsOrDate() async throws {
        let setup = try await start()
        setup.fcm.script("a", .sequence([.quotaExceeded(retryAfter: "0"), .accept]))
        let date = Date().addingTimeInterval(-5)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        setup.fcm.script("b", .sequence([.unavailable(retryAfter: formatter.string(from: date)), .accept]))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device("a"), device("b")]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(setup.fcm.received.map(\.status).sorted() == [200, 200, 429, 503])
    }

    @Test func exhaustedRetriesFailWith502InsteadOfSilentSuccess() async throws {
        let setup = try await start(extra: "max_attempts: 3\nretry_budget: 120")
        setup.fcm.script("down", .unavailable(retryAfter: nil))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device("down")]))
        await setup.stop()
        #expect(response.status == 502)
        #expect(setup.fcm.received.count == 3)
        // The retried body is still the well-formed v1 body.
        #expect(setup.fcm.received.allSatisfy { $0.body?["message"]?["token"] == "down" && $0.body?["message"]?["message"] == nil })
    }

    @Test func aRetryAfterBeyondTheBudgetFailsAtOnce() async throws {
        let setup = try await start(extra: "retry_budget: 5")
        setup.fcm.script("slow", .quotaExceeded(retryAfter: "600"))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device("slow")]))
        await setup.stop()
        #expect(response.status == 502)
        #expect(setup.fcm.received.count == 1)
    }

    @Test func accessTokensAreCachedAndRefreshedOn401() async throws {
        let setup = try await start()
        _ = try await setup.herald.notify(notifyBody(Self.message, devices: [device("a")]))
        _ = try await setup.herald.notify(notifyBody(Self.message, devices: [device("b")]))
        #expect(setup.fcm.tokenRequests == 1)
        setup.fcm.revokeAccessTokens()
        let afterRevoke = try await setup.herald.notify(notifyBody(Self.message, devices: [device("c")]))
        await setup.stop()
        #expect(afterRevoke.status == 200)
        #expect(setup.fcm.tokenRequests == 2)
        #expect(setup.fcm.received.map(\.status) == [200, 200, 401, 200])
    }

    @Test func tokensCloseToExpiryAreReplacedBeforeUse() async throws {
        let setup = try await start(tokenLifetime: 30)
        _ = try await setup.herald.notify(notifyBody(Self.message, devices: [device("a")]))
        _ = try await setup.herald.notify(notifyBody(Self.message, devices: [device("b")]))
        await setup.stop()
        #expect(setup.fcm.tokenRequests == 2)
        #expect(setup.fcm.received.allSatisfy { $0.status == 200 })
    }

    @Test func concurrentSendsShareOneTokenFetch() async throws {
        let setup = try await start()
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: (0..<20).map { device("t\($0)") }))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.fcm.tokenRequests == 1)
    }

    @Test func legacyBatchesChunksOf1000AndHandlesPerResultErrors() async throws {
        let setup = try await start(legacy: true, extra: "inflight_request_limit: 5000")
        setup.fcm.script("k7", .unregistered)
        setup.fcm.script("k1200", .invalidToken)
        setup.fcm.script("k5", .sequence([.unavailable(retryAfter: nil), .accept]))
        let keys = (0..<1500).map { "k\($0)" }
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: keys.map { device($0) }))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": ["k7", "k1200"]])
        let sent = setup.fcm.received
        #expect(sent.map(\.tokens.count).sorted() == [1, 500, 1000])  // two chunks, then k5 alone
        // k5's retry goes alone, with `to` (it may overtake the 500-chunk, which is not waited for).
        let alone = sent.filter { $0.tokens.count == 1 }
        #expect(alone.map { $0.body?["to"] } == ["k5"])
        #expect(alone.first?.body?["registration_ids"] == nil)
    }

    @Test func legacyBatchingOfTwoDevicesAndAFailureOfOne() async throws {
        let setup = try await start(legacy: true)
        setup.fcm.script("spqr2", .unregistered)
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device("spqr"), device("spqr2")]))
        await setup.stop()
        #expect(response.json == ["rejected": ["spqr2"]])
        #expect(setup.fcm.received.count == 1)
        #expect(setup.fcm.received.first?.body?["registration_ids"] == ["spqr", "spqr2"])
    }

    @Test func v1SendsOneRequestPerDevice() async throws {
        let setup = try await start()
        _ = try await setup.herald.notify(notifyBody(Self.message, devices: [device("spqr"), device("spqr2")]))
        await setup.stop()
        // Exactly one request each: an extra request (a duplicate, a retry) would show here.
        #expect(setup.fcm.received.map { $0.body?["message"]?["token"]?.stringValue ?? "" }.sorted() == ["spqr", "spqr2"])
    }

    @Test func fcmOptionsAreMergedIntoTheLegacyBody() async throws {
        let setup = try await start(legacy: true, extra: "fcm_options:\n  content_available: true\n  mutable_content: true")
        _ = try await setup.herald.notify(notifyBody(Self.message, devices: [device("spqr")]))
        await setup.stop()
        let body = try #require(setup.fcm.received.first?.body)
        #expect(body["content_available"] == true)
        #expect(body["mutable_content"] == true)
    }

    @Test func badgeOnlyWithBadgesOffSendsNothing() async throws {
        let setup = try await start(extra: "send_badge_counts: false")
        let response = try await setup.herald.notify(notifyBody(["counts": ["unread": 2]], devices: [device("spqr")]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.fcm.received.isEmpty)
    }

    @Test func visibleNotificationOption() async throws {
        let setup = try await start(extra: "visible_notification: true")
        _ = try await setup.herald.notify(notifyBody(Self.message, devices: [device("spqr")]))
        await setup.stop()
        #expect(setup.fcm.received.first?.body?["message"]?["notification"]?["title"] == "Mission Control")
    }

    @Test func unreachableFCMIs502() async throws {
        let dir = temporaryDirectory()
        let fcm = try await FakeFCM.start(directory: dir)
        await fcm.stop()
        let apps = """
              com.example.gcm:
                type: gcm
                api_version: legacy
                api_key: k
                base_url: http://127.0.0.1:1
                max_attempts: 2
                retry_initial_backoff: 0.01
                connect_timeout: 300
            """
        // A refused connection fails at its refusal, not at the connect timeout.
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        let response = try await herald.notify(notifyBody(Self.message, devices: [device("x")]))
        let metrics = try await herald.metricsText()
        let health = await herald.request(.GET, "/health")
        await herald.stop()
        #expect(response.status == 502)
        #expect(response.json?["errcode"] == "M_UNKNOWN")
        #expect(response.json?["rejected"] == [])
        #expect(response.json?["error"]?.stringValue?.hasPrefix("Failed to dispatch to 1 device(s): network error") == true)
        #expect(metrics.contains(#"sygnal_gcm_status_codes_total{pushkin="com.example.gcm",code="error"} 2"#))
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="com.example.gcm",outcome="failed",reason="network"} 1"#))
        #expect(health.status == 200)  // the server still serves
    }

    @Test func missingApiVersionMeansV1() async throws {
        let dir = temporaryDirectory()
        let fcm = try await FakeFCM.start(directory: dir)
        let (config, diagnostics) = try ConfigLoading.parse(
            gatewayYAML(apps: "  a:\n    type: gcm\n    project_id: p\n    service_account_file: \(fcm.serviceAccountFile)\n"))
        let gateway = Gateway(config: config, diagnostics: diagnostics, logger: .init(label: "t"), clock: SystemClock())
        #expect(diagnostics.errors == [])
        #expect((gateway.pushkins.first as? FCMPushkin)?.config.version == .v1)
        await gateway.close()
        await fcm.stop()
        let (_, bad) = try ConfigLoading.parse(gatewayYAML(apps: "  a:\n    type: gcm\n    api_version: v1\n"))
        let failed = Gateway(
            config: try ConfigLoading.parse(gatewayYAML(apps: "  a:\n    type: gcm\n    api_version: v1\n")).0, diagnostics: bad,
            logger: .init(label: "t"), clock: SystemClock())
        #expect(bad.errors.contains("apps.a.project_id: required key is missing"))
        #expect(bad.errors.contains("apps.a.service_account_file: required key is missing"))
        #expect(failed.pushkins.isEmpty)
    }

    /// A project id that cannot be a segment of the request's path is refused when the config is
    /// read, naming the key, and the app is left out; a domain-scoped id is accepted.
    @Test func aProjectIdThatCannotBeAPathSegmentIsRefused() async throws {
        let dir = temporaryDirectory()
        let fcm = try await FakeFCM.start(directory: dir)
        for project in ["my project", "p/../x", "p?q"] {
            let yaml = gatewayYAML(
                apps: "  a:\n    type: gcm\n    project_id: \"\(project)\"\n    service_account_file: \(fcm.serviceAccountFile)\n")
            let (config, diagnostics) = try ConfigLoading.parse(yaml)
            let gateway = Gateway(config: config, diagnostics: diagnostics, logger: .init(label: "t"), clock: SystemClock())
            #expect(
                diagnostics.errors == [
                    "apps.a.project_id: not a Firebase project id (letters, digits and - . : _ only): \(project.debugDescription)"
                ])
            #expect(gateway.pushkins.isEmpty)
            await gateway.close()
        }
        let (config, diagnostics) = try ConfigLoading.parse(
            gatewayYAML(
                apps: "  a:\n    type: gcm\n    project_id: example.com:my-app_1\n    service_account_file: \(fcm.serviceAccountFile)\n"))
        let gateway = Gateway(config: config, diagnostics: diagnostics, logger: .init(label: "t"), clock: SystemClock())
        #expect(diagnostics.errors == [])
        #expect(gateway.pushkins.count == 1)
        await gateway.close()
        await fcm.stop()
    }
}
