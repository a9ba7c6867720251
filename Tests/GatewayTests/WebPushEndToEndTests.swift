import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// Web Push through real sockets: Herald → the fake push service, which decrypts and checks VAPID
/// (docs/compatibility/webpush.md, plus Herald's retries, limits and endpoint policy).
@Suite struct WebPushEndToEndTests {
    struct Setup {
        let herald: InMemoryGateway
        let service: FakeWebPushService

        func stop() async {
            await herald.stop()
            await service.stop()
        }
    }

    func start(appExtra: String = "", otherApps: String = "", clock: any HeraldClock = SystemClock()) async throws -> Setup {
        let service = try await FakeWebPushService.start()
        let dir = temporaryDirectory()
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: webpushApp("com.example.webpush", directory: dir, extra: appExtra) + otherApps), clock: clock)
        return Setup(herald: herald, service: service)
    }

    func device(_ s: FakeWebPushService.Subscription, data extra: JSONObject = [:], app: String = "com.example.webpush") -> JSONValue {
        var data: JSONObject = ["endpoint": .string(s.endpoint), "auth": .string(s.auth)]
        for (k, v) in extra { data[k] = v }
        return ["app_id": .string(app), "pushkey": .string(s.p256dh), "pushkey_ts": 1_700_000_000, "data": .object(data)]
    }

    /// Replaces the devices of a recorded request with one device of the fake service.
    func withDevice(_ request: JSONValue, _ device: JSONValue) -> JSONValue {
        guard case .object(var root) = request, case .object(var n)? = root["notification"] else { return request }
        n["devices"] = .array([device])
        root["notification"] = .object(n)
        return .object(root)
    }

    @Test func sygnalsRecordedWebPushRequestDecryptsToExactlyWhatSygnalSent() async throws {
        let setup = try await start()
        let sample = try fixture("sygnal/webpush")
        let sub = setup.service.subscribe()
        let response = try await setup.herald.notify(withDevice(try #require(sample["notify_request"]), device(sub)))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        let received = try #require(setup.service.received(for: sub).first)
        #expect(received.problems == [])
        let expected = try #require(sample["upstream_requests"]?.arrayValue?.first?["decrypted"])
        #expect(try #require(received.payload).semanticallyEquals(expected))
        #expect(received.header("TTL") == "900")
        #expect(received.header("Urgency") == "normal")
        #expect(received.header("Content-Encoding") == "aes128gcm")
        #expect(received.header("Content-Type") == "application/octet-stream")
        #expect(received.header("Topic") == nil)
        #expect(received.vapidClaims?["sub"] == "mailto:ops@example.org")
    }

    /// Synapse's real bodies: what the subscriber decrypts is what Sygnal's rules produce.
    @Test(arguments: [
        (
            "synapse/message_webpush",
            #"{"room_id":"!jwV_lbLCpdNd3g2sE_GkvPePaGibb2hdsuGczReWK38","room_name":"Push Lab 12:47:44","event_id":"$fOVUvSq2-l4uHyoMAZAlJDeDODcdSvhETI3dq3iz1ro","sender":"@alice:localhost","sender_display_name":"Alice","type":"m.room.message","unread":1,"content":{"body":"Hello #1 from Alice","msgtype":"m.text"}}"#,
            "low"
        ),
        ("synapse/badge_only_after_read_receipt", #"{"unread":0}"#, "normal"),
        (
            "synapse/invite_member_event",
            #"{"room_id":"!jwV_lbLCpdNd3g2sE_GkvPePaGibb2hdsuGczReWK38","room_name":"Push Lab 12:47:44","membership":"invite","event_id":"$fUzqyYjLZCMbmYVDl7y6IHPE__e_oDuFDZYR9dpgl7Q","sender":"@alice:localhost","sender_display_name":"Alice","user_is_target":true,"type":"m.room.member","unread":1,"content":{"displayname":"Bob","membership":"invite"}}"#,
            "normal"
        ),
        (
            "synapse/message_event_id_only_default_payload",
            #"{"aps":{"alert":{"loc-args":[],"loc-key":"SINGLE_UNREAD"},"content-available":1,"mutable-content":1},"room_id":"!jwV_lbLCpdNd3g2sE_GkvPePaGibb2hdsuGczReWK38","event_id":"$fOVUvSq2-l4uHyoMAZAlJDeDODcdSvhETI3dq3iz1ro","unread":1}"#,
            "low"
        ),
        (
            "synapse/encrypted_event",
            #"{"room_id":"!jwV_lbLCpdNd3g2sE_GkvPePaGibb2hdsuGczReWK38","room_name":"Push Lab 12:47:44","event_id":"$JjHw_j2i3kxeaSiCqek5ux8XzRY4GSHotPXnTI5qb5k","sender":"@alice:localhost","sender_display_name":"Alice","type":"m.room.encrypted","unread":1,"content":{"algorithm":"m.megolm.v1.aes-sha2","ciphertext":"ix5eQ6DBbPDPBO2l3XxRV6ER0eJhbXcv4LX2QP4avaxQMMVOIUu352GmBOBKjZ_D7gLp3MYYl2kIC0H1Ia-mniV4AI__PgknPceMzRKbumB0-mXBonZ2mIv8oaOLFvwf","device_id":"CWECGYZSLL","sender_key":"gxCipX2LmTxfZBWWYkcDSgT6Zxv47kORiU4S1lmRrDk","session_id":"XvUxVZPltOmjHj0XadXGPcaBJj6eCX9zyQvTlqlpc_g"}}"#,
            "normal"
        ),
    ])
    func synapseBodies(_ name: String, _ expectedPayload: String, _ urgency: String) async throws {
        let setup = try await start()
        let sample = try fixture(name)
        let body = try #require(sample["request_body"])
        let sub = setup.service.subscribe()
        // Keep the pusher's data (default_payload, events_only) and point it at the fake service.
        var data = body["notification"]?["devices"]?.arrayValue?.first?["data"]?.objectValue ?? [:]
        data.removeValue(forKey: "endpoint")
        data.removeValue(forKey: "auth")
        let response = try await setup.herald.notify(withDevice(body, device(sub, data: data)))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        let received = try #require(setup.service.received(for: sub).first)
        #expect(received.problems == [])
        #expect(received.payload == (try JSONParser.parse(expectedPayload)))
        #expect(received.header("Urgency") == urgency)
    }

    @Test func synapsesRejectedPusherIsRejectedWhenThePushServiceSays410() async throws {
        let setup = try await start()
        let sub = setup.service.subscribe(behavior: .respond(status: 410))
        let body = try #require(try fixture("synapse/rejected_pushkey")["request_body"])
        let response = try await setup.herald.notify(withDevice(body, device(sub)))
        await setup.stop()
        #expect(response.json == ["rejected": [.string(sub.p256dh)]])
        #expect(setup.service.received(for: sub).count == 1)
    }

    @Test(arguments: [404, 410])
    func goneSubscriptionsAreRejected(_ status: Int) async throws {
        let setup = try await start()
        let sub = setup.service.subscribe(behavior: .respond(status: status))
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub)]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": [.string(sub.p256dh)]])
    }

    @Test(arguments: [400, 401, 403, 413])
    func otherClientErrorsAreNotRetriedNotRejectedAndCounted(_ status: Int) async throws {
        let setup = try await start()
        let sub = setup.service.subscribe(behavior: .respond(status: status))
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub)]))
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        #expect(setup.service.received(for: sub).count == 1)
        #expect(metrics.contains(#"sygnal_webpush_status_codes_total{pushkin="com.example.webpush",code="\#(status)"} 1"#))
        #expect(
            metrics.contains(#"herald_device_outcomes_total{pushkin="com.example.webpush",outcome="dropped",reason="http_\#(status)"} 1"#))
    }

    @Test func rateLimitIsRetriedHonouringRetryAfter() async throws {
        let setup = try await start()
        let sub = setup.service.subscribe(behavior: .sequence([.respond(status: 429, retryAfter: "0"), .respond(status: 201)]))
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub)]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        #expect(setup.service.received(for: sub).count == 2)
    }

    @Test func serverErrorsAreRetriedUpToMaxAttemptsThen502() async throws {
        let setup = try await start(appExtra: "max_attempts: 3\nretry_budget: 120")
        let sub = setup.service.subscribe(behavior: .respond(status: 503))
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub)]))
        await setup.stop()
        #expect(response.status == 502)
        #expect(response.json?["errcode"] == "M_UNKNOWN")
        #expect(setup.service.received(for: sub).count == 3)
    }

    @Test func retryAfterBeyondTheBudgetFailsAtOnce() async throws {
        let setup = try await start(appExtra: "retry_budget: 5")
        let sub = setup.service.subscribe(behavior: .respond(status: 429, retryAfter: "3600"))
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub)]))
        await setup.stop()
        #expect(response.status == 502)
        #expect(setup.service.received(for: sub).count == 1)
    }

    /// The push service holds both attempts: each is cut at `request_timeout` (as shipped, 10 s, on
    /// the test's clock), and the notify is answered 502 for its retry.
    @Test func aHangingPushServiceTimesOutAnd502s() async throws {
        let clock = ManualClock()
        let setup = try await start(appExtra: "request_timeout: 10\nmax_attempts: 2", clock: clock)
        let release = TestEvent()
        let sub = setup.service.subscribe(behavior: .hold(release, then: .respond()))
        async let answered = setup.herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub)]))
        let timedOut = await timingOut(clock, attempts: 2) { setup.service.received(for: sub).count }
        let response = try await answered
        release.raise()
        await setup.stop()
        #expect(timedOut)
        #expect(response.status == 502)
        #expect(setup.service.received(for: sub).count == 2)
    }

    @Test func anUnreachableEndpointFailsTheDeviceNotTheServer() async throws {
        let setup = try await start(appExtra: "max_attempts: 1")
        let dead = device(setup.service.subscribe(), data: ["endpoint": "http://127.0.0.1:1/push/x"])
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [dead]))
        let health = await setup.herald.request(.GET, "/health")
        await setup.stop()
        #expect(response.status == 502)
        #expect(health.status == 200)
    }

    @Test func lowPriorityTTLAndTopicHeaders() async throws {
        let setup = try await start(appExtra: "ttl: 60")
        let sub = setup.service.subscribe()
        let response = try await setup.herald.notify(
            notifyBody(
                ["event_id": "$e", "room_id": "!r:example.org", "prio": "low"], devices: [device(sub, data: ["only_last_per_room": true])]))
        await setup.stop()
        #expect(response.status == 200)
        let received = try #require(setup.service.received(for: sub).first)
        #expect(received.header("TTL") == "60")
        #expect(received.header("Urgency") == "low")
        let topic = try #require(received.header("Topic"))
        #expect(topic.count <= 32 && topic.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }

    @Test func eventsOnlySkipsBadgeUpdatesWithoutRejecting() async throws {
        let setup = try await start()
        let sub = setup.service.subscribe()
        let response = try await setup.herald.notify(
            notifyBody(["counts": ["unread": 2]], devices: [device(sub, data: ["events_only": true])]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.service.received(for: sub).isEmpty)
    }

    @Test func allowedEndpointsSkipsOthersWithoutRejecting() async throws {
        let setup = try await start(appExtra: "allowed_endpoints: ['push.example.net', '*.mozilla.com']")
        let sub = setup.service.subscribe()
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub)]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.service.received.isEmpty)
    }

    @Test func privateAndInsecureEndpointsAreRefusedByDefault() async throws {
        let service = try await FakeWebPushService.start()
        let dir = temporaryDirectory()
        let apps = """
              strict:
                type: webpush
                vapid_private_key: \(dir)/k.pem
                create_vapid_key_if_missing: true
                vapid_contact_email: ops@example.org
              https-only:
                type: webpush
                vapid_private_key: \(dir)/k.pem
                vapid_contact_email: ops@example.org
                allow_private_endpoints: true
            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        let sub = service.subscribe()
        let viaStrict = try await herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub, app: "strict")]))
        let httpsLoopback = device(sub, data: ["endpoint": .string("https://127.0.0.1:\(service.server.port)/push/x")], app: "strict")
        let viaStrictHTTPS = try await herald.notify(notifyBody(["event_id": "$e"], devices: [httpsLoopback]))
        let viaHTTPSOnly = try await herald.notify(notifyBody(["event_id": "$e"], devices: [device(sub, app: "https-only")]))
        await herald.stop()
        await service.stop()
        for response in [viaStrict, viaStrictHTTPS, viaHTTPSOnly] { #expect(response.json == ["rejected": []]) }
        #expect(service.received.isEmpty)
    }

    @Test func malformedSubscriptionsAreRejected() async throws {
        let setup = try await start()
        let sub = setup.service.subscribe()
        let noData: JSONValue = ["app_id": "com.example.webpush", "pushkey": .string(sub.p256dh)]
        let badKey: JSONValue = [
            "app_id": "com.example.webpush", "pushkey": "bm90IGEga2V5",
            "data": ["endpoint": .string(sub.endpoint), "auth": .string(sub.auth)],
        ]
        let badURL = device(sub, data: ["endpoint": "mailto:x@example.org"])
        let spaceInURL = device(sub, data: ["endpoint": .string(sub.endpoint + " x")])
        let noAuth: JSONValue = [
            "app_id": "com.example.webpush", "pushkey": .string(sub.p256dh), "data": ["endpoint": .string(sub.endpoint)],
        ]
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [noData, badKey, badURL, noAuth, spaceInURL]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json?["rejected"]?.arrayValue?.count == 5)
        #expect(setup.service.received.isEmpty)
    }

    @Test func oversizeNotificationsAreShortenedToFitOnePushMessage() async throws {
        let setup = try await start()
        let sub = setup.service.subscribe()
        let response = try await setup.herald.notify(
            notifyBody(
                [
                    "event_id": "$e", "room_name": .string(String(repeating: "🦉", count: 2000)),
                    "content": ["body": .string(String(repeating: "x", count: 999))],
                ],
                devices: [device(sub)]))
        await setup.stop()
        #expect(response.status == 200)
        let received = try #require(setup.service.received(for: sub).first)
        #expect(received.problems == [])
        #expect(received.body.count <= 4096)
        #expect(received.payload?["content"]?["body"]?.stringValue?.count == 999)
        #expect((received.payload?["room_name"]?.stringValue?.count ?? 0) > 100)
    }

    @Test func manyDevicesInOneRequestAllArrive() async throws {
        let setup = try await start()
        let subs = (0..<20).map { _ in setup.service.subscribe() }
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: subs.map { device($0) }))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        // Every subscription got its message (a timed-out try may have been retried on a loaded machine).
        #expect(Set(setup.service.received.map(\.path)) == Set(subs.map(\.path)))
        #expect(setup.service.received.allSatisfy { $0.problems.isEmpty })
    }
}
