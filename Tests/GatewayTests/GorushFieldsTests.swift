import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@testable import Gateway

/// gorush's `POST /api/push`, field for field (docs/status-protocol.md, "gorush's fields"): what
/// the fake APNs and the fake FCM receive for each group of gorush 1.22's fields, sent in sync mode
/// so that the answer comes after the push.
@Suite struct GorushFieldsTests {
    static let token = "0a0b0c0d"

    func push(_ setup: StatusEndToEndTests.Setup, _ notification: JSONValue) async throws -> TestResponse {
        try await setup.post("/api/push", JSONWriter.serialize(["notifications": [notification]]))
    }

    /// Exactly the JSON status-go's push server builds today for an APNs token (field names and
    /// values as it writes them): the push sounds, the app may wake to decrypt, and the deep link
    /// arrives.
    @Test func statusGosRequestOfTodayReachesAPNsAsAnAudiblePushTheAppCanWakeFor() async throws {
        let setup = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true")
        let body =
            #"{"notifications":[{"tokens":["0a0b0c0d"],"platform":1,"message":"New message in Messenger","topic":"im.status.ethereum","data":{"encryptedMessage":"0x1234","chatId":"0xabcd","publicKey":"0x04ef","deepLink":"status-app://chats"},"content_available":true,"sound":"default","priority":"high","push_type":"alert"}]}"#
        let response = try await setup.post("/api/push", Array(body.utf8))
        await setup.stop()
        #expect(response.json == ["success": "ok", "counts": 1, "logs": []])
        let sent = try #require(setup.apns.received.first)
        #expect(sent.status == 200)
        #expect(sent.headers["apns-priority"] == "10")
        #expect(sent.headers["apns-push-type"] == "alert")
        #expect(sent.headers["apns-topic"] == "im.status.ethereum")
        #expect(
            sent.payload == [
                "aps": ["alert": "New message in Messenger", "content-available": 1, "sound": "default"], "encryptedMessage": "0x1234",
                "chatId": "0xabcd", "publicKey": "0x04ef", "deepLink": "status-app://chats",
            ])
    }

    /// The push type a gorush notification names wins, and the payload follows it: `background`
    /// wakes the app with `aps` `{"content-available": 1}` alone; without a `push_type`, the
    /// request names the payload's own (`alert` for a message, `background` at 5 for
    /// `content_available` alone) (docs/compatibility/apns.md, "Push type and payload").
    @Test func thePayloadFollowsThePushTypeAndEveryRequestNamesOne() async throws {
        let setup = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true")
        let background: JSONValue = [
            "tokens": ["0a01"], "platform": 1, "message": "hidden", "badge": 3, "push_type": "background", "content_available": true,
            "data": ["chatId": "0x1"],
        ]
        let message: JSONValue = ["tokens": ["0a02"], "platform": 1, "message": "You have a new message"]
        let wake: JSONValue = ["tokens": ["0a03"], "platform": 1, "content_available": true]
        var answers: [Int] = []
        for notification in [background, message, wake] { answers.append(try await push(setup, notification).status) }
        await setup.stop()
        let sent = ["0a01", "0a02", "0a03"].map { token in setup.apns.received.first { $0.token == token } }
        #expect(answers == [200, 200, 200])
        #expect(sent.map { $0?.status } == [200, 200, 200])
        #expect(sent.map { $0?.headers["apns-push-type"] } == ["background", "alert", "background"])
        #expect(sent[0]?.headers["apns-priority"] == "5" && sent[2]?.headers["apns-priority"] == "5")
        #expect(sent[0]?.payload == ["aps": ["content-available": 1], "chatId": "0x1"])
        #expect(sent[1]?.payload?["aps"]?["alert"] == "You have a new message")
    }

    /// The alert dictionary, localization, badge, sound dictionary, grouping, Live Activity fields
    /// and the headers gorush sets.
    @Test func everyAPNsFieldGroupBecomesWhatGorushSends() async throws {
        let setup = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true")
        let notification: JSONValue = [
            "tokens": .array([.string(Self.token)]), "platform": 1, "title": "Alice", "message": "Hello",
            "alert": [
                "subtitle": "in Chat", "title-loc-key": "T", "title-loc-args": ["a"], "loc-key": "L", "loc-args": ["b", "c"],
                "action-loc-key": "OPEN", "launch-image": "l.png", "summary-arg": "Alice", "summary-arg-count": 2, "unknown": "ignored",
            ],
            "badge": 0, "category": "MESSAGE", "thread-id": "chat-1", "url-args": ["x"], "interruption_level": "time-sensitive",
            "mutable_content": true, "sound": ["critical": 1, "name": "alarm.caf", "volume": 0.5], "relevance-score": 0.75,
            "content-state": ["score": 1], "stale-date": 1_900_000_000, "dismissal-date": 1_900_000_100, "event": "update",
            "timestamp": 1_800_000_000, "priority": "normal", "push_type": "alert", "collapse_id": "c-1",
            "apns_id": "123e4567-e89b-12d3-a456-426614174000", "expiration": 0, "data": ["k": "v"], "not_a_gorush_field": true,
        ]
        let response = try await push(setup, notification)
        await setup.stop()
        #expect(response.status == 200)
        let sent = try #require(setup.apns.received.first)
        #expect(sent.status == 200)
        #expect(sent.headers["apns-priority"] == "5")
        #expect(sent.headers["apns-collapse-id"] == "c-1")
        #expect(sent.headers["apns-id"] == "123e4567-e89b-12d3-a456-426614174000")
        #expect(sent.headers["apns-expiration"] == "0")  // "deliver once or drop", never left out
        let aps = try #require(sent.payload?["aps"]?.objectValue)
        #expect(
            aps["alert"] == [
                "title": "Alice", "subtitle": "in Chat", "body": "Hello", "launch-image": "l.png", "title-loc-key": "T",
                "title-loc-args": ["a"], "loc-key": "L", "loc-args": ["b", "c"], "action-loc-key": "OPEN", "summary-arg": "Alice",
                "summary-arg-count": 2,
            ])
        #expect(aps["badge"] == 0)
        #expect(aps["category"] == "MESSAGE")
        #expect(aps["thread-id"] == "chat-1")
        #expect(aps["url-args"] == ["x"])
        #expect(aps["interruption-level"] == "time-sensitive")
        #expect(aps["mutable-content"] == 1)
        #expect(aps["sound"] == ["critical": 1, "name": "alarm.caf", "volume": 0.5])
        #expect(aps["relevance-score"] == 0.75)
        #expect(aps["content-state"] == ["score": 1])
        #expect(aps["stale-date"] == 1_900_000_000)
        #expect(aps["dismissal-date"] == 1_900_000_100)
        #expect(aps["event"] == "update")
        #expect(aps["timestamp"] == 1_800_000_000)
        #expect(aps["content-available"] == nil)
        #expect(sent.payload?["k"] == "v")
        #expect(sent.payload?["not_a_gorush_field"] == nil)
    }

    /// FCM v1: gorush's title, message and image over `notification`, `android` in FCM's JSON,
    /// `apns` made for `content_available` and `sound`, `webpush` and `fcm_options` as given, and
    /// `data` as strings.
    @Test func everyFCMFieldGroupBecomesWhatGorushSends() async throws {
        let setup = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true")
        let notification: JSONValue = [
            "tokens": ["fcm-1"], "platform": 2, "title": "Alice", "message": "Hello", "image": "https://example.org/i.png",
            "notification": ["title": "replaced", "body": "replaced too"], "priority": "high", "content_available": true,
            "sound": "ping.wav",
            "android": [
                "collapse_key": "chat", "ttl": "3600s", "priority": "normal",
                "notification": ["channel_id": "messages", "notification_priority": 4],
            ],
            "webpush": ["headers": ["Urgency": "high"]], "fcm_options": ["analytics_label": "status"],
            "data": ["chatId": "0x1", "count": 3, "nested": ["a": true]],
        ]
        let response = try await push(setup, notification)
        await setup.stop()
        #expect(response.status == 200)
        let sent = try #require(setup.fcm.received.first)
        #expect(sent.status == 200)
        let message = try #require(sent.body?["message"]?.objectValue)
        #expect(message["token"] == "fcm-1")
        #expect(message["notification"] == ["title": "Alice", "body": "Hello", "image": "https://example.org/i.png"])
        #expect(
            message["android"] == [
                "collapse_key": "chat", "ttl": "3600s", "priority": "NORMAL",
                "notification": ["channel_id": "messages", "notification_priority": "PRIORITY_HIGH"],
            ])
        #expect(
            message["apns"] == [
                "headers": ["apns-priority": "5"],
                "payload": [
                    "aps": ["content-available": 1, "chatId": "0x1", "count": 3, "nested": ["a": true], "sound": "ping.wav"]
                ],
            ])
        #expect(message["webpush"] == ["headers": ["Urgency": "high"]])
        #expect(message["fcm_options"] == ["analytics_label": "status"])
        #expect(message["data"] == ["chatId": "0x1", "count": "3", "nested": #"{"a":true}"#])
    }

    /// gorush's JSON binding: a field of the wrong type refuses the request with its 400, so that
    /// nothing half-read is queued; an unknown field is ignored.
    @Test(arguments: [
        #"{"tokens":["0a"],"platform":1,"badge":"1"}"#, #"{"tokens":["0a"],"platform":1,"content_available":"yes"}"#,
        #"{"tokens":["0a"],"platform":1,"expiration":1.5}"#, #"{"tokens":"0a","platform":1}"#,
        #"{"tokens":["0a"],"platform":1,"alert":{"title":3}}"#, #"{"tokens":["0a"],"platform":2,"android":[]}"#,
        #"{"tokens":["0a"],"platform":"1"}"#, #"{"tokens":["0a"],"platform":1,"sound":5}"#,
    ])
    func aFieldOfTheWrongTypeIsGorushs400(_ notification: String) async throws {
        let setup = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true")
        let response = try await setup.post("/api/push", Array(#"{"notifications":[\#(notification)]}"#.utf8))
        await setup.stop()
        #expect(response.status == 400)
        #expect(response.json == ["code": 400, "message": "Missing notifications field."])
        #expect(setup.apns.received.isEmpty && setup.fcm.received.isEmpty)
    }
}
