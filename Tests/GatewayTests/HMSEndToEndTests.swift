import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway

/// Huawei Push Kit through real sockets: Herald → the fake Push Kit, on the Android API (OAuth)
/// and on HarmonyOS's (PS256 JWT). docs/compatibility/hms.md.
@Suite struct HMSEndToEndTests {
    struct Setup {
        let herald: RunningGateway
        let hms: FakeHMS

        func stop() async {
            await herald.stop()
            await hms.stop()
        }
    }

    static let android = "com.example.hms"
    static let harmony = "com.example.harmony"

    /// `appKeys` go into both apps' sections (one key a line), `extra` after them.
    static func apps(_ hms: FakeHMS, appKeys: String = "", extra: String = "") -> String {
        let keys = appKeys.split(separator: "\n").map { "\n    " + $0 }.joined()
        return """
              \(android):
                type: hms
                api: android
                app_id: '\(hms.appId)'
                app_secret_file: \(hms.appSecretFile)
                token_url: \(hms.tokenURL)
                base_url: \(hms.baseURL)
                retry_initial_backoff: 0.01
                retry_max_backoff: 0.05\(keys)
              \(harmony):
                type: hms
                api: harmony
                service_account_file: \(hms.serviceAccountFile)
                base_url: \(hms.baseURL)
                retry_initial_backoff: 0.01
                retry_max_backoff: 0.05\(keys)
            \(extra)
            """
    }

    func start(appKeys: String = "", extra: String = "", top: String = "") async throws -> Setup {
        let hms = try await FakeHMS.start(directory: temporaryDirectory())
        let herald = try await RunningGateway.start(gatewayYAML(apps: Self.apps(hms, appKeys: appKeys, extra: extra), extra: top))
        return Setup(herald: herald, hms: hms)
    }

    func device(_ pushkey: String, app: String = HMSEndToEndTests.android, data: JSONObject = [:]) -> JSONValue {
        ["app_id": .string(app), "pushkey": .string(pushkey), "data": .object(data)]
    }

    /// The data map Sygnal's FCM v1 pushkin sent for the same notify.
    static func sygnalDataMap() throws -> (request: JSONValue, map: JSONValue) {
        let sample = try fixture("sygnal/fcmv1")
        let request = try #require(sample["notify_request"])
        let map = try #require(sample["upstream_requests"]?.arrayValue?.last?["body"]?["message"]?["data"])
        return (request, map)
    }

    @Test func aSynapseNotifyReachesTheAndroidAPIWithSygnalsDataMap() async throws {
        let setup = try await start()
        let (request, map) = try Self.sygnalDataMap()
        let response = try await setup.herald.notify(withAppId(request, Self.android))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        let sent = try #require(setup.hms.received.first)
        #expect(sent.path == "/v1/\(setup.hms.appId)/messages:send")
        #expect(sent.code == "80000000")
        #expect(sent.headers.first(name: "Authorization")?.hasPrefix("Bearer CV") == true)
        #expect(sent.body?["validate_only"] == false)
        let message = try #require(sent.body?["message"])
        let data = try JSONParser.parse(Array(try #require(message["data"]?.stringValue).utf8))
        #expect(data.semanticallyEquals(map))
        #expect(message["android"] == ["urgency": "HIGH", "ttl": "86400s"])
        #expect(sent.tokens.count == 1)
        #expect(setup.hms.tokenRequests == 1)
        #expect(setup.hms.problems == [])
    }

    @Test func aSynapseNotifyReachesHarmonyOSAsAnAlertWithTheMapForTheApp() async throws {
        let setup = try await start()
        let (request, map) = try Self.sygnalDataMap()
        let response = try await setup.herald.notify(withAppId(request, Self.harmony))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        let sent = try #require(setup.hms.received.first)
        #expect(sent.path == "/v3/\(setup.hms.projectId)/messages:send")
        #expect(sent.code == "80000000")
        #expect(setup.hms.problems == [])  // the PS256 JWT verified
        #expect(sent.headers.first(name: "push-type") == "0")
        let notification = try #require(sent.body?["payload"]?["notification"])
        #expect(notification["category"] == "IM")
        #expect(notification["title"] == "New message")
        #expect(notification["clickAction"]?["actionType"] == 0)
        #expect(try #require(notification["clickAction"]?["data"]).semanticallyEquals(map))
        let room = try #require(request["notification"]?["room_id"]?.stringValue)
        #expect(notification["notifyId"] == .int(Int64(HMSMessage.notifyId(room))))
        #expect(sent.body?["pushOptions"] == ["ttl": 86400])
        #expect(setup.hms.tokenRequests == 0)  // no OAuth on HarmonyOS
    }

    static let eventIdOnly: JSONValue = [
        "notification": [
            "event_id": "$e", "room_id": "!r:example.org", "counts": ["unread": 2], "prio": "high",
            "devices": [
                [
                    "app_id": .string(harmony), "pushkey": "harmony-1",
                    "data": ["format": "event_id_only", "default_payload": ["cs": "secret"]],
                ]
            ],
        ]
    ]
    static let eventIdOnlyMap: JSONValue = ["cs": "secret", "event_id": "$e", "room_id": "!r:example.org", "prio": "high", "unread": "2"]

    /// By default an `event_id_only` pusher on HarmonyOS gets a notification the user sees
    /// (push-type 0): the app's generic title and body (no content), the room as `notifyId`, the
    /// unread count as the badge, the ids for the app in `clickAction.data`.
    @Test func anEventIdOnlyPusherOnHarmonyOSGetsAnAlertWithTheAppsGenericText() async throws {
        let setup = try await start(appKeys: "title: Element\nbody: New activity")
        let response = try await setup.herald.notify(Self.eventIdOnly)
        await setup.stop()
        #expect(response.json == ["rejected": []])
        let sent = try #require(setup.hms.received.first)
        #expect(sent.status == 200)
        #expect(sent.headers.first(name: "push-type") == "0")
        let notification = try #require(sent.body?["payload"]?["notification"])
        #expect(notification["title"] == "Element")
        #expect(notification["body"] == "New activity")
        #expect(notification["notifyId"] == .int(Int64(HMSMessage.notifyId("!r:example.org"))))
        #expect(notification["badge"] == ["setNum": 2])
        #expect(notification["clickAction"]?["data"] == Self.eventIdOnlyMap)
        #expect(sent.body?["payload"]?["extraData"] == nil)
    }

    /// `extension` (push-type 2), for apps that hold Huawei's notification-extension right: the
    /// same notification, and the map as `extraData` for the extension to fetch the event with.
    @Test func anEventIdOnlyPusherCanStartTheAppsNotificationExtension() async throws {
        let setup = try await start(appKeys: "event_id_only_push_type: extension")
        let response = try await setup.herald.notify(Self.eventIdOnly)
        await setup.stop()
        #expect(response.json == ["rejected": []])
        let sent = try #require(setup.hms.received.first)
        #expect(sent.status == 200)
        #expect(sent.headers.first(name: "push-type") == "2")
        #expect(sent.body?["payload"]?["notification"]?["title"] == "New message")
        let extra = try JSONParser.parse(Array(try #require(sent.body?["payload"]?["extraData"]?.stringValue).utf8))
        #expect(extra == Self.eventIdOnlyMap)
    }

    /// `background` stays available (docs/compatibility/hms.md says what it costs).
    @Test func anEventIdOnlyPusherCanStillGetABackgroundMessage() async throws {
        let setup = try await start(appKeys: "event_id_only_push_type: background")
        let response = try await setup.herald.notify(Self.eventIdOnly)
        await setup.stop()
        #expect(response.json == ["rejected": []])
        let sent = try #require(setup.hms.received.first)
        #expect(sent.headers.first(name: "push-type") == "6")
        #expect(sent.body?["payload"]?["notification"] == nil)
        let extra = try JSONParser.parse(Array(try #require(sent.body?["payload"]?["extraData"]?.stringValue).utf8))
        #expect(extra == Self.eventIdOnlyMap)
    }

    @Test func devicesOfOneNotifyShareARequestAndOnlyRefusedTokensAreRejected() async throws {
        let setup = try await start()
        setup.hms.script("bad-token", .invalidToken)
        let response = try await setup.herald.notify(
            notifyBody(APNsEndToEndTests.message, devices: [device("good-1"), device("bad-token"), device("good-2")]))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": ["bad-token"]])
        #expect(setup.hms.received.count == 1)
        #expect(setup.hms.received.first?.tokens == ["good-1", "bad-token", "good-2"])
        #expect(setup.hms.received.first?.code == "80100000")
    }

    @Test func harmonyOSTokensAreRejectedByReasonAndNoRightAloneNeverRejects() async throws {
        let setup = try await start()
        setup.hms.script("malformed", .invalidToken)
        setup.hms.script("other-project", .noRight)
        let mixed = try await setup.herald.notify(
            notifyBody(
                APNsEndToEndTests.message,
                devices: [
                    device("fine", app: Self.harmony), device("malformed", app: Self.harmony), device("other-project", app: Self.harmony),
                ]))
        // Alone, `noRight` may be this app's credentials of another project: never a rejection.
        // (Another event: the same one would be a repeat, answered from the record.)
        var another = APNsEndToEndTests.message
        another["event_id"] = "$another-event"
        let alone = try await setup.herald.notify(notifyBody(another, devices: [device("other-project", app: Self.harmony)]))
        await setup.stop()
        #expect(mixed.json == ["rejected": ["malformed", "other-project"]])
        #expect(alone.status == 502)
        #expect(alone.json?["rejected"] == [])
        #expect(setup.hms.received.last?.code == "80300007")
    }

    @Test func aRefusedAccessTokenIsRenewedOnceAndTheMessageSentAgain() async throws {
        let setup = try await start()
        _ = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [device("first")]))
        setup.hms.revokeAccessTokens()
        let response = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [device("second")]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.hms.tokenRequests == 2)
        #expect(setup.hms.received.map(\.code) == ["80000000", "80200003", "80000000"])
    }

    @Test func flowControlIsRetriedAndConfigurationErrorsFailWithoutRejecting() async throws {
        let setup = try await start()
        setup.hms.script("busy", .sequence([.answer(status: 503, code: "81000001"), .accept]))
        setup.hms.script("forbidden", .answer(status: 403, code: "80300002"))
        let busy = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [device("busy")]))
        let forbidden = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [device("forbidden")]))
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(busy.json == ["rejected": []])
        #expect(setup.hms.received.filter { $0.tokens == ["busy"] }.map(\.code) == ["81000001", "80000000"])
        #expect(forbidden.status == 502)
        #expect(forbidden.json?["rejected"] == [])
        #expect(setup.hms.received.filter { $0.tokens == ["forbidden"] }.count == 1)  // not retried
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="com.example.hms",outcome="failed",reason="hms_80300002"} 1"#))
        #expect(metrics.contains(#"sygnal_hms_status_codes_total{pushkin="com.example.hms",code="503"} 1"#))
    }

    @Test func aMessageOverPushKitsLimitIsDroppedWithoutARequest() async throws {
        let setup = try await start()
        var message = APNsEndToEndTests.message
        message["room_name"] = .string(String(repeating: "r", count: 1000))
        message["sender_display_name"] = .string(String(repeating: "s", count: 1000))
        message["content"] = [
            "body": .string(String(repeating: "b", count: 1000)), "formatted_body": .string(String(repeating: "f", count: 1000)),
            "msgtype": "m.text",
        ]
        let response = try await setup.herald.notify(notifyBody(message, devices: [device("big")]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.hms.received.isEmpty)
    }

    @Test func sendTestReachesPushKit() async throws {
        let setup = try await start()
        let result = await setup.herald.gateway.sendTest(appId: Self.harmony, pushkey: "harmony-test")
        await setup.stop()
        #expect(result.succeeded)
        #expect(setup.hms.received.first?.tokens == ["harmony-test"])
    }

    /// gorush's platform 3 goes through `status.hms_app`: a visible notification with the data,
    /// and a token Push Kit refuses is logged as a failed push.
    @Test func gorushPlatformThreeGoesThroughTheStatusHMSApp() async throws {
        let dir = temporaryDirectory()
        let setup = try await start(top: "status:\n  hms_app: \(Self.android)\n  store: \(dir)/status.sqlite\n")
        setup.hms.script("bad-huawei", .invalidToken)
        let body =
            #"{"notifications":[{"tokens":["huawei-1","bad-huawei"],"platform":3,"title":"Status","message":"You have a new message","data":{"chatId":"0x01"}}]}"#
        let posted = try await setup.herald.request(.POST, "/api/push", body: Array(body.utf8))
        let settled = await eventually(within: .seconds(20)) {
            let stats = try? await setup.herald.request(.GET, "/api/stat/app")
            return stats?.json?["huawei"] == ["push_success": 1, "push_error": 1]
        }
        let stats = try await setup.herald.request(.GET, "/api/stat/app")
        #expect(settled, "\(String(decoding: stats.body, as: UTF8.self)) \(String(decoding: posted.body, as: UTF8.self))")
        await setup.stop()
        #expect(posted.status == 200)
        let sent = setup.hms.received.filter { $0.path.hasPrefix("/v1/") }
        #expect(Set(sent.flatMap(\.tokens)) == ["huawei-1", "bad-huawei"])
        let android = try #require(sent.first?.body?["message"]?["android"])
        #expect(android["notification"]?["title"] == "Status")
        #expect(android["notification"]?["body"] == "You have a new message")
        let data = try JSONParser.parse(Array(try #require(sent.first?.body?["message"]?["data"]?.stringValue).utf8))
        #expect(data == ["chatId": "0x01"])
    }
}
