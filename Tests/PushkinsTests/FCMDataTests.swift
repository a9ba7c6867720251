import NIOCore
import NIOHTTP1
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

/// docs/compatibility/fcm.md: the FCM data map and request bodies.
@Suite struct FCMDataTests {
    static let canonical = WebPushPayloadTests.canonical
    static let device = Device(appId: "com.example.gcm", pushkey: "spqr")

    func data(_ n: PushNotification, _ version: FCMData.APIVersion, device: Device = device, badges: Bool = true) -> JSONObject? {
        guard case .send(let d) = FCMData.build(n, device: device, version: version, sendBadgeCounts: badges) else { return nil }
        return d
    }

    /// An FCM v1 body as the writer writes it, read back.
    static func v1(
        data: JSONObject, token: String, notification: PushNotification, options: JSONObject, visible: Bool,
        badgePriority: BadgePriority = .normal
    ) throws -> JSONValue {
        let body = FCMMessage.v1(
            data: data, target: FCMTarget(token, rule: .token), notification: notification, options: options, visible: visible,
            badgePriority: badgePriority)
        return try JSONParser.parse(String(buffer: body))
    }

    @Test func legacyExpectedBody() {
        let body = FCMMessage.legacy(
            data: data(Self.canonical, .legacy) ?? [:], tokens: ["spqr"], notification: Self.canonical, options: [:])
        let expected: JSONValue = [
            "data": [
                "event_id": "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs", "type": "m.room.message", "sender": "@exampleuser:matrix.org",
                "room_name": "Mission Control", "room_alias": "#exampleroom:matrix.org", "sender_display_name": "Major Tom",
                "content": ["msgtype": "m.text", "body": "I'm floating in a most peculiar way.", "other": 1],
                "room_id": "!slw48wfj34rtnrf:example.com", "prio": "high", "unread": 2, "missed_calls": 1,
            ],
            "priority": "high", "to": "spqr",
        ]
        #expect(body == expected)  // key order included
    }

    @Test func v1ExpectedBody() throws {
        let options: JSONObject = [
            "android": ["notification": ["body": "test body"]],
            "apns": ["payload": ["aps": ["content-available": 1, "mutable-content": 1, "alert": ""]]],
        ]
        let body = try Self.v1(
            data: data(Self.canonical, .v1) ?? [:], token: "spqr", notification: Self.canonical, options: options, visible: false)
        let expected: JSONValue = [
            "message": [
                "android": ["notification": ["body": "test body"], "priority": "high"],
                "apns": ["payload": ["aps": ["content-available": 1, "mutable-content": 1, "alert": ""]]],
                "data": [
                    "event_id": "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs", "type": "m.room.message",
                    "sender": "@exampleuser:matrix.org",
                    "room_name": "Mission Control", "room_alias": "#exampleroom:matrix.org", "sender_display_name": "Major Tom",
                    "room_id": "!slw48wfj34rtnrf:example.com", "content_msgtype": "m.text",
                    "content_body": "I'm floating in a most peculiar way.", "prio": "high", "unread": "2", "missed_calls": "1",
                ],
                "token": "spqr",
            ]
        ]
        #expect(body == expected)  // key order included: the options' members first
    }

    @Test func badgeCountsOff() {
        #expect(data(Self.canonical, .legacy, badges: false)?["unread"] == nil)
        #expect(
            Set(data(Self.canonical, .v1, badges: false)?.keys ?? []) == [
                "content_body", "content_msgtype", "event_id", "prio", "room_alias", "room_id", "room_name", "sender",
                "sender_display_name", "type",
            ])
        let badgeOnly = PushNotification(sender: "", counts: .init(unread: 2))
        #expect(FCMData.build(badgeOnly, device: Self.device, version: .v1, sendBadgeCounts: false) == .nothingToSend)
        #expect(data(badgeOnly, .legacy) == ["sender": "", "prio": "high", "unread": 2])
        let eventOnly = PushNotification(eventId: "$e", roomId: "!r", counts: .init(unread: 2))
        #expect(data(eventOnly, .v1, badges: false) == ["event_id": "$e", "room_id": "!r", "prio": "high"])
    }

    @Test func zeroCountsAreLeftOutAndNothingWorthSendingIsDiscarded() {
        #expect(
            FCMData.build(PushNotification(counts: .init(unread: 0)), device: Self.device, version: .v1, sendBadgeCounts: true)
                == .nothingToSend)
        #expect(data(PushNotification(counts: .init(unread: 0, missedCalls: 3)), .v1) == ["prio": "high", "missed_calls": "3"])
    }

    @Test func defaultPayloadComesFirstAndMustBeAnObject() {
        let withDefault = Device(appId: "a", pushkey: "k", data: ["default_payload": ["x": "y", "prio": "z"]])
        #expect(
            data(PushNotification(eventId: "$e", prio: "low"), .legacy, device: withDefault) == [
                "x": "y", "prio": "normal", "event_id": "$e",
            ])
        let bad = Device(appId: "a", pushkey: "k", data: ["default_payload": nil])
        #expect(FCMData.build(Self.canonical, device: bad, version: .v1, sendBadgeCounts: true) == .invalidDefaultPayload)
    }

    /// v1 flattens the notification's `content` object, else default_payload's, into `content_*`
    /// after `room_id`; a `content` that is no object stays where it is (key order included).
    @Test func v1FlattensTheContentObjectWhereverItComesFrom() {
        func device(_ defaults: JSONObject) -> Device { Device(appId: "a", pushkey: "k", data: ["default_payload": .object(defaults)]) }
        var plain = PushNotification(eventId: "$e")
        plain.roomId = "!r"
        var withContent = plain
        withContent.content = ["body": "b", "n": 1]

        #expect(
            data(plain, .v1, device: device(["content": ["k": "v", "n": 2], "x": "y"])) == [
                "x": "y", "event_id": "$e", "room_id": "!r", "content_k": "v", "prio": "high",
            ])
        #expect(
            data(plain, .v1, device: device(["content": "text", "x": "y"])) == [
                "content": "text", "x": "y", "event_id": "$e", "room_id": "!r", "prio": "high",
            ])
        #expect(
            data(withContent, .v1, device: device(["content": "text", "x": "y"])) == [
                "x": "y", "event_id": "$e", "room_id": "!r", "content_body": "b", "prio": "high",
            ])
        #expect(
            data(withContent, .legacy, device: device(["content": "text", "x": "y"])) == [
                "content": ["body": "b", "n": 1], "x": "y", "event_id": "$e", "room_id": "!r", "prio": "high",
            ])
    }

    @Test func largeFieldsAreCutAt1024BytesWithoutSplittingACharacter() throws {
        var n = Self.canonical
        n.roomName = String(repeating: "r", count: 2100)
        let prefix = "🦉£☻" + String(repeating: "o", count: 1011)  // 1020 bytes
        n.content = ["msgtype": "m.text", "body": "b", "other": .string(prefix + "⚑" + String(repeating: "x", count: 1000))]
        let d = try #require(data(n, .v1))
        #expect(d["room_name"] == .string(String(repeating: "r", count: 1021) + "…"))
        #expect(d["content_other"] == .string(prefix + "…"))
        #expect(d["content_body"] == "b")
    }

    @Test func v1DataValuesBecomeStringsAndApsMovesToTheAPNsBlock() throws {
        let (strings, aps) = FCMData.stringify([
            "a": "s", "n": 1, "b": true, "o": ["k": "v"], "z": nil, "aps": ["alert": ["loc-key": "SINGLE_UNREAD"], "mutable-content": 1],
        ])
        #expect(strings == ["a": "s", "n": "1", "b": "true", "o": #"{"k":"v"}"#])
        #expect(aps == ["alert": ["loc-key": "SINGLE_UNREAD"], "mutable-content": 1])
        let body = try Self.v1(
            data: ["event_id": "$e", "aps": ["mutable-content": 1]], token: "t", notification: PushNotification(eventId: "$e"),
            options: ["apns": ["payload": ["aps": ["content-available": 1]]]], visible: false)
        #expect(body["message"]?["apns"]?["payload"]?["aps"] == ["content-available": 1, "mutable-content": 1])
        #expect(body["message"]?["data"] == ["event_id": "$e"])
    }

    /// The v1 message as the same members set one by one in a `JSONObject` over the options (a
    /// member they have keeps its place), then serialised: what the writer must write, byte for byte.
    static func membersSetInOrder(
        data: JSONObject, target: FCMTarget, notification n: PushNotification, options: JSONObject, visible: Bool,
        badgePriority: BadgePriority
    ) -> String {
        var message = options
        message.removeValue(forKey: target.kind == .token ? "fid" : "token")
        let (strings, aps) = FCMData.stringify(data)
        message["data"] = .object(strings)
        var android = message["android"]?.objectValue ?? JSONObject()
        android["priority"] = .string(badgePriority.isHigh(n) ? "high" : "normal")
        message["android"] = .object(android)
        if let aps {
            var apns = message["apns"]?.objectValue ?? JSONObject()
            var payload = apns["payload"]?.objectValue ?? JSONObject()
            var merged = payload["aps"]?.objectValue ?? JSONObject()
            for (key, value) in aps { merged[key] = value }
            payload["aps"] = .object(merged)
            apns["payload"] = .object(payload)
            message["apns"] = .object(apns)
        }
        if visible, message["notification"] == nil, let block = FCMMessage.visibleBlock(n) { message["notification"] = .object(block) }
        message[target.member] = .string(target.value)
        return JSONWriter.string(["message": .object(message)])
    }

    @Test func v1IsWrittenAsItsMembersSetOverTheOptions() throws {
        let options: [JSONObject] = [
            [:],
            ["android": ["ttl": "10s", "collapse_key": "c"]],
            ["android": ["priority": "normal", "ttl": "1s"], "fcm_options": ["analytics_label": "l"]],
            ["android": "not an object"],
            ["token": "theirs", "data": ["a": "b"], "webpush": ["headers": ["TTL": "60"]]],
            ["fid": "theirs", "android": ["ttl": "2s"]],
            ["notification": ["title": "theirs"], "apns": ["headers": ["apns-priority": "5"]]],
            ["notification": nil, "apns": "not an object"],
            ["apns": ["payload": ["aps": ["content-available": 1, "sound": "x"]]], "android": [:]],
        ]
        let maps: [JSONObject] = [
            try #require(data(Self.canonical, .v1)),
            ["event_id": "$e", "aps": ["mutable-content": 1, "sound": "y"], "n": 1],
            [:],
        ]
        let notifications = [
            Self.canonical, PushNotification(counts: .init(unread: 1)), PushNotification(eventId: "$e", type: "m.room.encrypted"),
        ]
        var compared = 0
        for options in options {
            for data in maps {
                for n in notifications {
                    for visible in [false, true] {
                        for (priority, target) in [BadgePriority.normal, .high].flatMap({ p in Self.targets.map { (p, $0) } }) {
                            let written = FCMMessage.v1(
                                data: data, target: target, notification: n, options: options, visible: visible, badgePriority: priority)
                            let expected = Self.membersSetInOrder(
                                data: data, target: target, notification: n, options: options, visible: visible, badgePriority: priority)
                            #expect(String(buffer: written) == expected, "options \(options), data \(data), visible \(visible)")
                            compared += 1
                        }
                    }
                }
            }
        }
        #expect(compared == 9 * 3 * 3 * 2 * 2 * 2)
    }

    /// A registration token and an installation id (22 characters of base64url).
    static let targets = [FCMTarget("spqr", rule: .auto), FCMTarget("cXJzdHV2d3h5ejAxMjM0NQ", rule: .auto)]

    /// `fcm_target: auto` sends an FID as `message.fid` and anything else as `message.token`;
    /// `token` and `fid` decide regardless of the pushkey.
    @Test func aPushkeysTargetIsItsKindOrTheAppsChoice() {
        let fid = "dGhpc2lzYW5maWRhYmNkZQ"
        let token = "dGhpc2lzYW5maWRhYmNkZQ:APA91bH" + String(repeating: "x", count: 140)
        #expect(FCMTarget(fid, rule: .auto).kind == .fid)
        #expect(FCMTarget(token, rule: .auto).kind == .token)
        #expect(FCMTarget("short", rule: .auto).kind == .token)
        #expect(FCMTarget("dGhpc2lzYW5maWRhYmNk+Q", rule: .auto).kind == .token)  // not base64url
        #expect(FCMTarget(fid, rule: .token).kind == .token)
        #expect(FCMTarget(token, rule: .fid).kind == .fid)
        #expect(FCMTarget(fid, rule: .auto).member == "fid")
    }

    @Test func visibleNotificationBlock() throws {
        let body = try Self.v1(data: [:], token: "t", notification: Self.canonical, options: [:], visible: true)
        #expect(
            body["message"]?["notification"] == ["title": "Mission Control", "body": "Major Tom: I'm floating in a most peculiar way."])
        let badge = try Self.v1(
            data: [:], token: "t", notification: PushNotification(counts: .init(unread: 1)), options: [:], visible: true)
        #expect(badge["message"]?["notification"] == nil)
    }
}

/// Every FCM v1 answer is placed: the status for the codes whose meaning it carries, the code for
/// the rest (docs/compatibility/fcm.md).
@Suite struct FCMDispositionTests {
    static func body(_ json: String) -> FCMErrorBody {
        FCMErrorBody(UpstreamResponse(status: 400, headers: HTTPHeaders(), body: ByteBuffer(string: json)))
    }

    @Test func answersArePlacedByStatusAndCode() {
        let none = Self.body("")
        #expect(FCMDisposition.of(status: 200, error: none) == .delivered)
        #expect(FCMDisposition.of(status: 401, error: none) == .renewCredential)
        #expect(FCMDisposition.of(status: 404, error: none) == .deadToken)
        #expect(FCMDisposition.of(status: 429, error: none) == .temporary)
        #expect(FCMDisposition.of(status: 503, error: none) == .temporary)
        #expect(FCMDisposition.of(status: 403, error: none) == .permanent)
        let unregistered = Self.body(#"{"error":{"status":"NOT_FOUND","details":[{"errorCode":"UNREGISTERED"}]}}"#)
        #expect(FCMDisposition.of(status: 400, error: unregistered) == .deadToken)
        let badToken = Self.body(
            #"{"error":{"status":"INVALID_ARGUMENT","details":[{"fieldViolations":[{"field":"message.token"}]}]}}"#)
        #expect(FCMDisposition.of(status: 400, error: badToken) == .deadToken)
        let badPayload = Self.body(#"{"error":{"status":"INVALID_ARGUMENT","message":"Invalid JSON payload"}}"#)
        #expect(FCMDisposition.of(status: 400, error: badPayload) == .permanent)
        let quota = Self.body(#"{"error":{"status":"RESOURCE_EXHAUSTED","details":[{"errorCode":"QUOTA_EXCEEDED"}]}}"#)
        #expect(FCMDisposition.of(status: 429, error: quota) == .temporary)
        let sender = Self.body(#"{"error":{"status":"PERMISSION_DENIED","details":[{"errorCode":"SENDER_ID_MISMATCH"}]}}"#)
        #expect(FCMDisposition.of(status: 403, error: sender) == .permanent)
    }
}
