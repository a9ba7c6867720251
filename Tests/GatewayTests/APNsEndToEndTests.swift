import Crypto
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// APNs through real sockets: Herald → the fake APNs (HTTP/2 over TLS, JWT or client-certificate
/// checks). docs/compatibility/apns.md.
@Suite struct APNsEndToEndTests {
    struct Setup {
        let herald: RunningGateway
        let apns: FakeAPNs
        let directory: String

        func stop() async {
            await herald.stop()
            await apns.stop()
        }
    }

    static let topic = "com.example.app"

    /// `extra` goes into the app's section, `top` at the top level of the config.
    func start(
        extra: String = "", top: String = "", maxConcurrentStreams: Int = 1000, certificate: Bool = false, limit: Int = 512,
        clock: any HeraldClock = SystemClock()
    ) async throws -> Setup {
        let dir = temporaryDirectory()
        let pki = try TestPKI(directory: dir)
        let apns: FakeAPNs
        var auth: String
        if certificate {
            apns = try await FakeAPNs.start(
                pki: pki, topic: Self.topic, auth: .clientCertificate, maxConcurrentStreams: maxConcurrentStreams)
            auth = "certfile: \(try pki.issueClientCertificate(topic: Self.topic))"
        } else {
            apns = try await FakeAPNs.start(
                pki: pki, topic: Self.topic, auth: try APNsTestKey(directory: dir).auth, maxConcurrentStreams: maxConcurrentStreams)
            auth = "keyfile: \(dir)/AuthKey.p8\n    key_id: ABC123DEFG\n    team_id: TEAM123456\n    topic: \(Self.topic)"
        }
        let apps = """
              com.example.apns:
                type: apns
                \(auth)
                base_url: \(apns.baseURL)
                tls_ca_file: \(pki.caFile)
                retry_initial_backoff: 0.01
                retry_max_backoff: 0.05
                inflight_request_limit: \(limit)
            \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

            """
        let herald = try await RunningGateway.start(gatewayYAML(apps: apps, extra: top), clock: clock)
        return Setup(herald: herald, apns: apns, directory: dir)
    }

    static func pushkey() -> String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }
    static func hex(_ pushkey: String) -> String { APNsDeviceToken.token(fromPushkey: pushkey, convertToHex: true) ?? "" }

    func device(_ pushkey: String, data: JSONObject = [:], tweaks: JSONObject? = nil) -> JSONValue {
        var d: JSONObject = ["app_id": "com.example.apns", "pushkey": .string(pushkey), "data": .object(data)]
        if let tweaks { d["tweaks"] = .object(tweaks) }
        return .object(d)
    }

    static let message: JSONObject = [
        "event_id": "$3957tyerfgewrf384", "room_id": "!slw48wfj34rtnrf:example.org", "type": "m.room.message",
        "sender": "@exampleuser:matrix.org", "sender_display_name": "Major Tom", "room_name": "Mission Control", "prio": "high",
        "content": ["msgtype": "m.text", "body": "I'm floating in a most peculiar way."], "counts": ["unread": 2, "missed_calls": 1],
    ]

    @Test func sygnalsRecordedRequestWithTheSoundFix() async throws {
        let setup = try await start()
        let sample = try fixture("sygnal/apns")
        let response = try await setup.herald.notify(try #require(sample["notify_request"]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        let upstream = try #require(sample["upstream_requests"]?.arrayValue?.first)
        let received = try #require(setup.apns.received.first)
        #expect(received.status == 200)
        #expect(
            "/3/device/" + received.token
                == upstream["headers"]?.arrayValue?.first { $0.arrayValue?.first == ":path" }?.arrayValue?.last?.stringValue)
        guard case .object(var expected)? = upstream["body"], case .object(var aps)? = expected["aps"] else { return }
        aps["sound"] = "default"  // Sygnal issue 107: tweaks.sound now reaches the device
        expected["aps"] = .object(aps)
        #expect(try #require(received.payload).semanticallyEquals(.object(expected)))
        // Byte for byte Sygnal's length (Python's separators), plus the sound: `, "sound": "default"`.
        let sygnalLength = try #require(upstream["body_len"]?.pythonInt)
        #expect(received.body.count == Int(sygnalLength) + #", "sound": "default""#.utf8.count)
        #expect(received.headers["apns-topic"] == Self.topic)
        #expect(received.headers["apns-priority"] == "10")
        // Sygnal sends no push type; Herald names the one the payload is (docs/compatibility/apns.md,
        // "Push type and payload").
        #expect(received.headers["apns-push-type"] == "alert")
        #expect(received.headers["apns-collapse-id"] == "$3957tyerfgewrf384")
        let expiration = try #require(received.headers["apns-expiration"].flatMap(Int.init))
        #expect(expiration > Int(Date().timeIntervalSince1970))
    }

    @Test func synapseEventIdOnlyPusherWithDefaultPayload() async throws {
        let setup = try await start()
        let body = withAppId(try #require(try fixture("synapse/message_event_id_only_default_payload")["request_body"]), "com.example.apns")
        let response = try await setup.herald.notify(body)
        await setup.stop()
        #expect(response.json == ["rejected": []])
        let received = try #require(setup.apns.received.first)
        #expect(received.token == Self.hex("WaFdPILtt/qTUNSId+OHuC1zzjrkB0H2N5YcmXR2XK4="))
        #expect(received.headers["apns-priority"] == "5")
        #expect(
            received.payload?.semanticallyEquals([
                "aps": ["alert": ["loc-args": [], "loc-key": "SINGLE_UNREAD"], "content-available": 1, "mutable-content": 1],
                "room_id": "!jwV_lbLCpdNd3g2sE_GkvPePaGibb2hdsuGczReWK38", "event_id": "$fOVUvSq2-l4uHyoMAZAlJDeDODcdSvhETI3dq3iz1ro",
                "unread_count": 1,
            ]) == true)
    }

    @Test(arguments: [
        (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"), (400, "TopicDisallowed"), (410, "Unregistered"), (410, "ExpiredToken"),
    ])
    func deadTokensAreRejectedWithoutRetry(_ status: Int, _ reason: String) async throws {
        let setup = try await start()
        let key = Self.pushkey()
        setup.apns.script(Self.hex(key), .fail(status, reason))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(key)]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": [.string(key)]])  // the original pushkey, not the hex token
        #expect(setup.apns.received.count == 1)
    }

    @Test(arguments: [(500, "InternalServerError"), (503, "ServiceUnavailable"), (429, "TooManyProviderTokenUpdates")])
    func temporaryErrorsAreRetriedThen502(_ status: Int, _ reason: String) async throws {
        let setup = try await start(extra: "max_attempts: 3\nretry_budget: 120")
        let key = Self.pushkey()
        setup.apns.script(Self.hex(key), .fail(status, reason))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(key)]))
        await setup.stop()
        #expect(response.status == 502)
        #expect(response.json?["rejected"] == [])
        #expect(setup.apns.received.count == 3)
    }

    /// Apple throttles one device token: a retry within the notify would only add to it. The device
    /// fails at once (502), so the homeserver backs off, and the other device is unaffected.
    @Test(arguments: ["TooManyRequests", nil])
    func aThrottledDeviceTokenIsAskedOnceAndFails(_ reason: String?) async throws {
        let setup = try await start(extra: "max_attempts: 3\nretry_budget: 120")
        let (throttled, fine) = (Self.pushkey(), Self.pushkey())
        setup.apns.script(Self.hex(throttled), .fail(429, reason ?? "", retryAfter: "0"))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(throttled), device(fine)]))
        await setup.stop()
        #expect(response.status == 502)
        #expect(response.json?["rejected"] == [])
        #expect(setup.apns.received(token: Self.hex(throttled)).count == 1)
        #expect(setup.apns.received(token: Self.hex(fine)).map(\.status) == [200])
    }

    /// A request whose answer was lost (the stream reset, the connection dropped) may have reached
    /// Apple: it is sent again, since a retry is what delivers it otherwise, and the resend is
    /// counted, as a push the device may get twice (docs/operations.md).
    @Test(arguments: [FakeAPNs.Behavior.resetStream, .dropConnection])
    func aRequestWhoseAnswerWasLostIsSentAgainAndCounted(_ lost: FakeAPNs.Behavior) async throws {
        let setup = try await start(extra: "max_attempts: 3\nretry_budget: 120")
        let key = Self.pushkey()
        setup.apns.script(Self.hex(key), .sequence([lost, .accept]))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(key)]))
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(response.status == 200)
        #expect(setup.apns.received(token: Self.hex(key)).last?.status == 200)
        #expect(metrics.contains(#"herald_upstream_resent_unanswered_total{pushkin="com.example.apns"} 1"#))
    }

    @Test func aTemporaryErrorThenSuccessIsDelivered() async throws {
        let setup = try await start()
        let key = Self.pushkey()
        setup.apns.script(Self.hex(key), .sequence([.fail(503, "ServiceUnavailable", retryAfter: "0"), .accept]))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(key)]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(setup.apns.received.map(\.status) == [503, 200])
    }

    @Test(arguments: [(400, "BadMessageId"), (413, "PayloadTooLarge"), (400, "BadTopic")])
    func otherClientErrorsFailAtOnceWith502(_ status: Int, _ reason: String) async throws {
        let setup = try await start()
        let key = Self.pushkey()
        setup.apns.script(Self.hex(key), .fail(status, reason))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(key)]))
        await setup.stop()
        #expect(response.status == 502)
        #expect(setup.apns.received.count == 1)
    }

    @Test(arguments: ["ExpiredProviderToken", "InvalidProviderToken"])
    func aRefusedProviderTokenIsRefreshedAndRetriedOnce(_ refusal: String) async throws {
        let setup = try await start()
        let key = Self.pushkey()
        setup.apns.script(Self.hex(key), .sequence([.fail(403, refusal), .accept]))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(key)]))
        let again = Self.pushkey()
        setup.apns.script(Self.hex(again), .fail(403, refusal))
        let second = try await setup.herald.notify(notifyBody(Self.message, devices: [device(again)]))
        await setup.stop()
        #expect(response.status == 200)
        let first = setup.apns.received(token: Self.hex(key))
        try #require(first.map(\.status) == [403, 200])  // (else the next line would index past the end)
        #expect(first[0].headers["authorization"] != first[1].headers["authorization"])
        #expect(second.status == 502)  // refreshed once only
        #expect(setup.apns.received(token: Self.hex(again)).count == 2)
    }

    @Test func invalidPushkeysAndDefaultPayloadsAreRejectedWithoutARequest() async throws {
        let setup = try await start()
        let response = try await setup.herald.notify(
            notifyBody(Self.message, devices: [device("abc"), device(Self.pushkey(), data: ["default_payload": "x"])]))
        await setup.stop()
        #expect(response.json?["rejected"]?.arrayValue?.count == 2)
        #expect(setup.apns.received.isEmpty)
    }

    @Test func lowPriorityPushTypeAndNoCollapseIdWithoutAnEvent() async throws {
        let setup = try await start(extra: "push_type: alert")
        var low = Self.message
        low["prio"] = "low"
        _ = try await setup.herald.notify(notifyBody(low, devices: [device(Self.pushkey())]))
        _ = try await setup.herald.notify(notifyBody(["counts": ["unread": 4]], devices: [device(Self.pushkey())]))
        await setup.stop()
        let received = setup.apns.received
        #expect(received.count == 2)
        #expect(received[0].headers["apns-priority"] == "5")
        #expect(received.allSatisfy { $0.headers["apns-push-type"] == "alert" })
        #expect(received[1].headers["apns-collapse-id"] == nil)
        #expect(received[1].payload == ["aps": ["badge": 4]])
    }

    @Test func badgeCountsOff() async throws {
        let setup = try await start(extra: "send_badge_counts: false")
        let badgeOnly = try await setup.herald.notify(notifyBody(["counts": ["unread": 4]], devices: [device(Self.pushkey())]))
        let full = try await setup.herald.notify(notifyBody(Self.message, devices: [device(Self.pushkey())]))
        await setup.stop()
        #expect(badgeOnly.json == ["rejected": []])
        #expect(full.json == ["rejected": []])
        #expect(setup.apns.received.count == 1)
        #expect(setup.apns.received.first?.payload?["aps"]?["badge"] == nil)
    }

    @Test func oversizeMessagesAreCutToExactly4096Bytes() async throws {
        let setup = try await start()
        var big = Self.message
        big["content"] = ["msgtype": "m.text", "body": .string(String(repeating: "⚑", count: 3000))]
        let response = try await setup.herald.notify(notifyBody(big, devices: [device(Self.pushkey())]))
        await setup.stop()
        #expect(response.status == 200)
        let received = try #require(setup.apns.received.first)
        #expect(received.status == 200)
        #expect(received.body.count <= 4096 && received.body.count > 4093)
        let body = try #require(received.payload?["aps"]?["alert"]?["loc-args"]?.arrayValue?.last?.stringValue)
        #expect(body.allSatisfy { $0 == "⚑" })
    }

    @Test func certificateModeTakesTheTopicFromTheCertificateAndExportsItsExpiry() async throws {
        let setup = try await start(certificate: true)
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(Self.pushkey())]))
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(response.status == 200)
        #expect(setup.apns.received.first?.status == 200)
        #expect(setup.apns.received.first?.headers["apns-topic"] == Self.topic)
        #expect(setup.apns.received.first?.headers["authorization"] == nil)
        #expect(metrics.contains(#"sygnal_client_cert_expiry{pushkin="com.example.apns"}"#))
    }

    @Test func aThousandConcurrentDevicesShareAtMostTheConfiguredConnections() async throws {
        // The subject is how the devices share two connections, not how long they take: beside
        // busy loops on two cores, a debug build's thousand requests waited in their origin's
        // queue past the default 10 s request timeout and were sent again (1 119 received).
        let setup = try await start(
            extra: "max_connections: 2\nrequest_timeout: 120", top: "notify:\n  answer_within: 300", maxConcurrentStreams: 100,
            limit: 5000)
        let keys = (0..<1000).map { _ in Self.pushkey() }
        setup.apns.scriptDefault(.delay(.milliseconds(20), then: .accept))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: keys.map { device($0) }))
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.apns.received.count == 1000)
        #expect(setup.apns.received.allSatisfy { $0.status == 200 })
        #expect(setup.apns.connectionsAccepted <= 2)
        #expect(setup.apns.maxConcurrentRequests > 2)  // multiplexed, not one request per connection at a time
        #expect(metrics.contains(#"sygnal_apns_status_codes_total{pushkin="com.example.apns",code="200"} 1000"#))
    }

    @Test func theStreamLimitPerConnectionIsHonoured() async throws {
        let setup = try await start(extra: "max_connections: 1\nmax_concurrent_streams: 5", limit: 5000)
        setup.apns.scriptDefault(.delay(.milliseconds(20), then: .accept))
        let keys = (0..<60).map { _ in Self.pushkey() }
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: keys.map { device($0) }))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.apns.received.count == 60)
        #expect(setup.apns.maxConcurrentRequests <= 5)
        #expect(setup.apns.maxConcurrentRequests > 1)
    }

    @Test func goAwayAndDroppedConnectionsAreRecoveredFrom() async throws {
        let setup = try await start(extra: "max_connections: 1")
        let first = Self.pushkey()
        setup.apns.script(Self.hex(first), .goAway(then: .accept))
        let a = try await setup.herald.notify(notifyBody(Self.message, devices: [device(first)]))
        // At once: `b` may race the GOAWAY on its way, and is sent again on a new connection if so.
        let b = try await setup.herald.notify(notifyBody(Self.message, devices: [device(Self.pushkey())]))
        let dropped = Self.pushkey()
        setup.apns.script(Self.hex(dropped), .sequence([.dropConnection, .accept]))
        let c = try await setup.herald.notify(notifyBody(Self.message, devices: [device(dropped)]))
        let d = try await setup.herald.notify(notifyBody(Self.message, devices: [device(Self.pushkey())]))
        await setup.stop()
        #expect([a, b, c, d].map(\.status) == [200, 200, 200, 200])
        #expect(setup.apns.connectionsAccepted >= 3)
        #expect(setup.apns.received(token: Self.hex(dropped)).map(\.status) == [0, 200])
    }

    /// A stream APNs resets is that request's failure only: it is sent again on the same
    /// connection, and the other requests on it are untouched.
    @Test func aResetStreamIsRetriedOnTheSameConnection() async throws {
        // A reset left unnoticed would wait out the request timeout (300 s) before the retry: the
        // notify would then go unanswered past the client's 60 s and fail, not pass slowly.
        let setup = try await start(extra: "max_connections: 1\nrequest_timeout: 300", top: "notify:\n  answer_within: 300\n")
        let reset = Self.pushkey()
        let other = Self.pushkey()
        setup.apns.script(Self.hex(reset), .sequence([.resetStream, .accept]))
        let response = try await setup.herald.notify(notifyBody(Self.message, devices: [device(reset), device(other)]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        #expect(setup.apns.received(token: Self.hex(reset)).map(\.status) == [0, 200])
        #expect(setup.apns.received(token: Self.hex(other)).map(\.status) == [200])
        #expect(setup.apns.connectionsAccepted == 1)
    }

    /// APNs holds both attempts: each is cut at `request_timeout` (as shipped, 10 s, on the test's
    /// clock), and the notify is answered 502 for its retry.
    @Test func aHangingAPNsTimesOutWithinTheBudgetAnd502s() async throws {
        let clock = ManualClock()
        let setup = try await start(extra: "request_timeout: 10\nmax_attempts: 2", clock: clock)
        let key = Self.pushkey()
        let release = TestEvent()
        setup.apns.script(Self.hex(key), .hold(release, then: .accept))
        async let answered = setup.herald.notify(notifyBody(Self.message, devices: [device(key)]))
        let timedOut = await timingOut(clock, attempts: 2) { setup.apns.arrived(token: Self.hex(key)) }
        let response = try await answered
        release.raise()
        await setup.stop()
        #expect(timedOut)
        #expect(response.status == 502)
        #expect(setup.apns.arrived(token: Self.hex(key)) == 2)
    }

    @Test func anUnreachableAPNsIs502NotACrash() async throws {
        let dir = temporaryDirectory()
        let key = P256.Signing.PrivateKey()
        try key.pemRepresentation.write(toFile: "\(dir)/k.p8", atomically: true, encoding: .utf8)
        let apps = """
              com.example.apns:
                type: apns
                keyfile: \(dir)/k.p8
                key_id: K
                team_id: T
                topic: t
                base_url: https://127.0.0.1:1
                max_attempts: 2
                retry_initial_backoff: 0.01
                connect_timeout: 300
            """
        // A refused connection fails at its refusal: were it left to the connect timeout (300 s),
        // the notify would go unanswered past the client's 60 s and fail.
        let herald = try await RunningGateway.start(gatewayYAML(apps: apps))
        let response = try await herald.notify(notifyBody(Self.message, devices: [device(Self.pushkey())]))
        let metrics = try await herald.metricsText()
        let health = try await herald.request(.GET, "/health")
        await herald.stop()
        #expect(response.status == 502)
        #expect(response.json?["errcode"] == "M_UNKNOWN")
        #expect(response.json?["rejected"] == [])
        #expect(response.json?["error"]?.stringValue?.hasPrefix("Failed to dispatch to 1 device(s): network error") == true)
        #expect(metrics.contains(#"sygnal_apns_status_codes_total{pushkin="com.example.apns",code="error"} 2"#))
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="com.example.apns",outcome="failed",reason="network"} 1"#))
        #expect(health.status == 200)
    }
}
