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
        #expect(sent.payload?["aps"]?["alert"] != nil)
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
