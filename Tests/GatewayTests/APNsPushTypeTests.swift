import Foundation
import HeraldCore
import HeraldTestSupport
import Pushkins
import Testing

@testable import Gateway

/// Apple's rules per push type (docs/compatibility/apns.md, "Push types"): what Herald derives
/// when the config leaves it out, what `check-config` refuses, and what the fake APNs, which
/// checks them as Apple does, receives.
@Suite struct APNsPushTypeTests {
    func notify(_ setup: APNsEndToEndTests.Setup, prio: String) async throws -> TestResponse {
        var message = APNsEndToEndTests.message
        message["prio"] = .string(prio)
        return try await setup.herald.notify(notifyBody(message, devices: [APNsEndToEndTests().device(APNsEndToEndTests.pushkey())]))
    }

    /// The topic suffix and the priority come from the push type; the Matrix payload is Sygnal's.
    @Test(arguments: [
        ("background", "high", "com.example.app", "5"), ("voip", "high", "com.example.app.voip", "10"),
        ("widgets", "low", "com.example.app.push-type.widgets", "5"), ("pushtotalk", "low", "com.example.app.voip-ptt", "10"),
        ("fileprovider", "high", "com.example.app.pushkit.fileprovider", "5"),
        ("liveactivity", "high", "com.example.app.push-type.liveactivity", "10"), ("alert", "low", "com.example.app", "5"),
    ])
    func eachPushTypeGoesOutWithTheTopicAndPriorityAppleRequires(_ type: String, _ prio: String, _ topic: String, _ priority: String)
        async throws
    {
        let setup = try await APNsEndToEndTests().start(extra: "push_type: \(type)")
        let response = try await notify(setup, prio: prio)
        await setup.stop()
        #expect(response.status == 200)
        let sent = try #require(setup.apns.received.first)
        #expect(sent.status == 200)
        #expect(sent.headers["apns-push-type"] == type)
        #expect(sent.headers["apns-topic"] == topic)
        #expect(sent.headers["apns-priority"] == priority)
        // A background push wakes the app and shows nothing; every other type keeps the alert.
        if type == "background" {
            #expect(sent.payload?["aps"] == ["content-available": 1])
            #expect(sent.payload?["event_id"] != nil && sent.payload?["room_id"] != nil)
        } else {
            #expect(sent.payload?["aps"]?["alert"] != nil)
        }
    }

    /// A `push_type: background` app: whatever the notify holds, `aps` is exactly
    /// `{"content-available": 1}` (Apple: nothing that triggers user interaction), and the
    /// Matrix keys stay at the top level for the app to fetch with; `default_payload`'s own `aps`
    /// does not make it a mix.
    @Test func aBackgroundAppsPayloadWakesTheAppAndShowsNothing() async throws {
        let setup = try await APNsEndToEndTests().start(extra: "push_type: background")
        let (full, eventOnly, withDefault) = (APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey())
        var message = APNsEndToEndTests.message
        message["prio"] = "high"
        message["counts"] = ["unread": 3, "missed_calls": 1]
        _ = try await setup.herald.notify(notifyBody(message, devices: [APNsEndToEndTests().device(full)]))
        let idOnly: JSONObject = ["event_id": "$only", "room_id": "!r:example.org", "counts": ["unread": 2]]
        _ = try await setup.herald.notify(notifyBody(idOnly, devices: [APNsEndToEndTests().device(eventOnly)]))
        let device: JSONValue = [
            "app_id": "com.example.apns", "pushkey": .string(withDefault),
            "data": ["default_payload": ["aps": ["content-available": 1, "mutable-content": 1], "cs": "secret"]],
        ]
        _ = try await setup.herald.notify(notifyBody(idOnly, devices: [device]))
        await setup.stop()
        let sent = [full, eventOnly, withDefault].map { setup.apns.received(token: APNsEndToEndTests.hex($0)).first }
        #expect(sent.allSatisfy { $0?.status == 200 })
        #expect(sent.allSatisfy { $0?.headers["apns-push-type"] == "background" && $0?.headers["apns-priority"] == "5" })
        #expect(sent.allSatisfy { $0?.payload?["aps"] == ["content-available": 1] })
        #expect(sent[0]?.payload?["event_id"] == message["event_id"] && sent[0]?.payload?["room_id"] == message["room_id"])
        #expect(sent[1]?.payload?["event_id"] == "$only" && sent[1]?.payload?["unread_count"] == 2)
        #expect(sent[2]?.payload?["cs"] == "secret" && sent[2]?.payload?["event_id"] == "$only")
    }

    /// An app with no `push_type`: every request names one, the one its payload is: `alert` for
    /// a message (10, or 5 for `prio: low`), `background` at 5 for a `default_payload` that only
    /// wakes the app.
    @Test func anAppWithoutAPushTypeNamesThePayloadsOwn() async throws {
        let setup = try await APNsEndToEndTests().start()
        let (high, low, wake) = (APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey())
        _ = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [APNsEndToEndTests().device(high)]))
        var lowMessage = APNsEndToEndTests.message
        lowMessage["prio"] = "low"
        _ = try await setup.herald.notify(notifyBody(lowMessage, devices: [APNsEndToEndTests().device(low)]))
        let device: JSONValue = [
            "app_id": "com.example.apns", "pushkey": .string(wake), "data": ["default_payload": ["aps": ["content-available": 1]]],
        ]
        _ = try await setup.herald.notify(notifyBody(["event_id": "$wake", "room_id": "!r:example.org"], devices: [device]))
        await setup.stop()
        let sent = [high, low, wake].map { setup.apns.received(token: APNsEndToEndTests.hex($0)).first }
        #expect(sent.map { $0?.status } == [200, 200, 200])
        #expect(sent.map { $0?.headers["apns-push-type"] } == ["alert", "alert", "background"])
        #expect(sent.map { $0?.headers["apns-priority"] } == ["10", "5", "5"])
        #expect(sent[2]?.payload?["aps"] == ["content-available": 1])
    }

    /// The fake refuses a background request whose `aps` shows something, or does not wake the app.
    @Test func theFakeRefusesABackgroundPushThatShowsSomething() {
        #expect(FakeAPNs.backgroundProblem(["aps": ["content-available": 1]]) == nil)
        #expect(FakeAPNs.backgroundProblem(["aps": ["content-available": 1, "badge": 1]]) == "BackgroundWithVisibleContent")
        #expect(FakeAPNs.backgroundProblem(["event_id": "$e"]) == "BackgroundWithoutContentAvailable")
    }

    /// The fake refuses what Apple refuses, so that the rules above are what makes a push pass.
    @Test func theFakeRefusesWhatAppleRefuses() async throws {
        let setup = try await APNsEndToEndTests().start()
        await setup.stop()
        let base = APNsEndToEndTests.topic
        let fake = setup.apns
        #expect(fake.headerProblem(["apns-topic": base, "apns-push-type": "background", "apns-priority": "10"]) == "BadPriority")
        #expect(fake.headerProblem(["apns-topic": base, "apns-push-type": "background"]) == "BadPriority")  // 10 by default
        #expect(fake.headerProblem(["apns-topic": base, "apns-push-type": "voip"]) == "BadTopic")
        #expect(
            fake.headerProblem(["apns-topic": base + ".voip-ptt", "apns-push-type": "pushtotalk", "apns-priority": "5"]) == "BadPriority")
        #expect(fake.headerProblem(["apns-topic": "org.other.app", "apns-push-type": "alert"]) == "DeviceTokenNotForTopic")
        #expect(fake.headerProblem(["apns-topic": base + ".voip", "apns-push-type": "voip"]) == nil)
        #expect(fake.headerProblem(["apns-topic": base + ".push-type.widgets", "apns-push-type": "widgets", "apns-priority": "5"]) == nil)
    }

    /// `expiration: 0` is "deliver once or drop": the header is sent as 0, never left out.
    @Test func anExpirationOfZeroIsSentAsZero() async throws {
        let setup = try await APNsEndToEndTests().start(extra: "expiration: 0")
        let response = try await notify(setup, prio: "high")
        await setup.stop()
        #expect(response.status == 200)
        #expect(setup.apns.received.first?.headers["apns-expiration"] == "0")
    }

    @Test(arguments: [
        ("push_type: background\n    priority: 10", "apps.a.priority: Apple accepts push_type background only with priority 5, got 10"),
        ("push_type: fileprovider\n    priority: 10", "apps.a.priority: Apple accepts push_type fileprovider only with priority 5, got 10"),
        ("push_type: pushtotalk\n    priority: 5", "apps.a.priority: Apple accepts push_type pushtotalk only with priority 10, got 5"),
        (
            "push_type: voip\n    topic: com.example.app.complication",
            "apps.a.topic: 'com.example.app.complication' is a topic for another push type"
        ),
        (
            "push_type: liveactivity\n    topic: com.example.app.voip",
            "apps.a.topic: 'com.example.app.voip' is a topic for another push type"
        ),
        ("push_type: widgets\n    topic: com.example.app.location-query", "apps.a.topic: 'com.example.app.location-query' is a topic"),
        ("push_type: carrier-pigeon", "apps.a.push_type: must be one of"),
        ("priority: 7", "apps.a.priority: must be 5 or 10, got 7"),
    ])
    func checkConfigRefusesAPushTypeItsTopicOrPriorityContradicts(_ keys: String, _ error: String) async throws {
        let dir = temporaryDirectory()
        _ = try APNsTestKey(directory: dir)
        let topic = keys.contains("topic:") ? "" : "\n    topic: com.example.app"
        let yaml = """
            apps:
              a:
                type: apns
                keyfile: \(dir)/AuthKey.p8
                key_id: ABC123DEFG
                team_id: TEAM123456\(topic)
                \(keys)
            """
        let errors = await ConfigTests().diagnose(yaml).errors
        #expect(errors.contains { $0.hasPrefix(error) }, "\(errors)")
    }

    @Test func aTopicWithItsOwnSuffixIsKeptAsItIs() throws {
        let voip = try #require(APNsPushType.named("voip"))
        #expect(voip.topic("com.example.app.voip") == "com.example.app.voip")
        #expect(voip.topic("com.example.app") == "com.example.app.voip")
        #expect(voip.contradictingSuffix(of: "com.example.app.voip") == nil)
        // `.voip-ptt` ends neither with `.voip` nor the other way round: a pushtotalk topic.
        #expect(voip.contradictingSuffix(of: "com.example.app.voip-ptt") == ".voip-ptt")
        #expect(try #require(APNsPushType.named("alert")).contradictingSuffix(of: "com.example.voip") == nil)
    }
}
