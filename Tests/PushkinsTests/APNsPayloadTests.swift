import Foundation
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

/// docs/compatibility/apns.md: what Sygnal sends to APNs, and how it is cut to 4096 bytes.
@Suite struct APNsPayloadTests {
    static let canonical = WebPushPayloadTests.canonical
    static let plain = Device(appId: "com.example.apns", pushkey: "spqr")
    static let withDefault = Device(
        appId: "com.example.apns", pushkey: "spqr",
        data: ["default_payload": ["aps": ["mutable-content": 1, "alert": ["loc-key": "SINGLE_UNREAD", "loc-args": []]]]])

    func payload(_ n: PushNotification, _ device: Device = plain, badges: Bool = true) -> JSONValue? {
        guard case .send(let p) = APNsPayload.build(n, device: device, sendBadgeCounts: badges) else { return nil }
        return .object(p)
    }

    @Test func expected() {
        #expect(
            payload(Self.canonical)
                == [
                    "aps": [
                        "alert": [
                            "loc-key": "MSG_FROM_USER_IN_ROOM_WITH_CONTENT",
                            "loc-args": ["Major Tom", "Mission Control", "I'm floating in a most peculiar way."],
                        ], "badge": 3,
                    ],
                    "room_id": "!slw48wfj34rtnrf:example.com", "event_id": "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs",
                ])
    }

    @Test func soundTweakGoesIntoApsSound() {
        var device = Self.plain
        device.tweaks = ["sound": "default"]
        #expect(payload(Self.canonical, device)?["aps"]?["sound"] == "default")
        #expect(payload(Self.canonical)?["aps"]?["sound"] == nil)
    }

    @Test func eventIdOnlyWithDefaultPayload() {
        let n = PushNotification(eventId: "$e", roomId: "!r", counts: .init(unread: 2))
        #expect(
            payload(n, Self.withDefault)?.semanticallyEquals([
                "room_id": "!r", "event_id": "$e", "unread_count": 2,
                "aps": ["alert": ["loc-key": "SINGLE_UNREAD", "loc-args": []], "mutable-content": 1],
            ]) == true)
        #expect(
            payload(PushNotification(eventId: "$e", counts: .init(unread: 0, missedCalls: 1)))?.semanticallyEquals([
                "event_id": "$e", "unread_count": 0, "missed_calls": 1,
            ]) == true)
        #expect(payload(n, badges: false) == ["room_id": "!r", "event_id": "$e"])
    }

    @Test func badgeOnlyIgnoresDefaultPayload() {
        let n = PushNotification(sender: "", counts: .init(unread: 2))
        #expect(payload(n, Self.withDefault) == ["aps": ["badge": 2]])
        #expect(payload(PushNotification(counts: .init(missedCalls: 4))) == ["aps": ["badge": 4]])
        #expect(payload(PushNotification(counts: .init(unread: 0))) == ["aps": ["badge": 0]])
        #expect(APNsPayload.build(n, device: Self.plain, sendBadgeCounts: false) == .nothingToSend)
        #expect(APNsPayload.build(PushNotification(), device: Self.plain, sendBadgeCounts: true) == .nothingToSend)
    }

    @Test func fullModeMergesDefaultPayloadDeeply() {
        let p = payload(Self.canonical, Self.withDefault)
        #expect(p?["aps"]?["mutable-content"] == 1)
        #expect(p?["aps"]?["alert"]?["loc-key"] == "MSG_FROM_USER_IN_ROOM_WITH_CONTENT")
        #expect(p?["aps"]?["badge"] == 3)
        // A member event without an alert still merges it (docs/compatibility/apns.md).
        var member = PushNotification(type: "m.room.member", counts: .init(unread: 1))
        member.membership = "join"
        #expect(payload(member, Self.withDefault)?["aps"]?["mutable-content"] == 1)
    }

    @Test func noBadgeWhenBadgeCountsAreOff() {
        #expect(payload(Self.canonical, badges: false)?["aps"]?["badge"] == nil)
    }

    static let locKeys: [(PushNotification, String, [String])] = {
        func message(_ msgtype: String?, body: String? = "hi", room: String? = "Room", alias: String? = nil) -> PushNotification {
            var content = JSONObject()
            if let msgtype { content["msgtype"] = .string(msgtype) }
            if let body { content["body"] = .string(body) }
            return PushNotification(
                type: "m.room.message", sender: "@a:x", senderDisplayName: "Alice", roomName: room, roomAlias: alias,
                content: .object(content))
        }
        var invite = PushNotification(
            type: "m.room.member", sender: "@a:x", senderDisplayName: "Alice", roomName: "Room", userIsTarget: true)
        invite.membership = "invite"
        var inviteAlias = invite
        inviteAlias.roomName = nil
        inviteAlias.roomAlias = "#r:x"
        var inviteChat = inviteAlias
        inviteChat.roomAlias = nil
        return [
            (message("m.image"), "IMAGE_FROM_USER_IN_ROOM", ["Alice", "hi", "Room"]),
            (message("m.text"), "MSG_FROM_USER_IN_ROOM_WITH_CONTENT", ["Alice", "Room", "hi"]),
            (message("m.notice"), "MSG_FROM_USER_IN_ROOM_WITH_CONTENT", ["Alice", "Room", "hi"]),
            (message("m.emote"), "ACTION_FROM_USER_IN_ROOM", ["Room", "Alice", "hi"]),
            (message(nil), "MSG_FROM_USER_IN_ROOM", ["Alice", "Room"]),
            (message("m.text", body: nil), "MSG_FROM_USER_IN_ROOM", ["Alice", "Room"]),
            (message("m.text", room: nil, alias: "#alias:x"), "MSG_FROM_USER_IN_ROOM_WITH_CONTENT", ["Alice", "#alias:x", "hi"]),
            (message("m.image", room: nil), "IMAGE_FROM_USER", ["Alice", "hi"]),
            (message("m.text", room: nil), "MSG_FROM_USER_WITH_CONTENT", ["Alice", "hi"]),
            (message("m.emote", room: nil), "ACTION_FROM_USER", ["Alice", "hi"]),
            (message(nil, room: nil), "MSG_FROM_USER", ["Alice"]),
            (PushNotification(type: "m.room.encrypted", sender: "@a:x", roomName: "Room"), "MSG_FROM_USER_IN_ROOM", ["@a:x", "Room"]),
            (
                PushNotification(
                    type: "m.call.invite", senderDisplayName: "Alice", content: ["offer": ["sdp": "v=0\nm=audio 1\nm=video 2"]]),
                "VIDEO_CALL_FROM_USER", ["Alice"]
            ),
            (
                PushNotification(type: "m.call.invite", senderDisplayName: "Alice", content: ["offer": ["sdp": "m=audio"]]),
                "VOICE_CALL_FROM_USER", ["Alice"]
            ),
            (invite, "USER_INVITE_TO_NAMED_ROOM", ["Alice", "Room"]),
            (inviteAlias, "USER_INVITE_TO_NAMED_ROOM", ["Alice", "#r:x"]),
            (inviteChat, "USER_INVITE_TO_CHAT", ["Alice"]),
            (PushNotification(type: "m.sticker", sender: "@a:x", senderDisplayName: ""), "MSG_FROM_USER", [""]),
            (PushNotification(type: "m.sticker"), "MSG_FROM_USER", [" "]),
        ]
    }()

    @Test(arguments: locKeys)
    func locKeyMatrix(_ n: PushNotification, _ key: String, _ args: [String]) {
        let result = APNsPayload.locKey(n)
        #expect(result?.0 == key)
        #expect(result.map { Array($0.1) } == args)
    }

    @Test func memberEventsOtherThanInvitesHaveNoLocKey() {
        var n = PushNotification(type: "m.room.member", sender: "@a:x", userIsTarget: false)
        n.membership = "invite"
        #expect(APNsPayload.locKey(n) == nil)
    }

    @Test func namesAreClippedTo1024CodePoints() {
        let n = PushNotification(
            type: "m.room.message", senderDisplayName: String(repeating: "🦉", count: 2000), roomName: String(repeating: "r", count: 5000))
        let args = APNsPayload.locKey(n).map { Array($0.1) } ?? []
        #expect(args.map { $0.unicodeScalars.count } == [1024, 1024])
    }
}

@Suite struct APNsTruncationTests {
    func overhead(_ payload: JSONValue) -> Int { JSONWriter.serialize(payload, style: .python).count }

    @Test func dontTruncate() {
        let p: JSONObject = ["aps": ["alert": .string(String(repeating: "x", count: 20))]]
        #expect(APNsTruncation.fit(p, limit: 256) == JSONWriter.serialize(.object(p), style: .python))
    }

    @Test func truncateStringAlert() throws {
        let limit = overhead(["aps": ["alert": ""]]) + 5
        let bytes = try #require(APNsTruncation.fit(["aps": ["alert": "0123456789"]], limit: limit))
        #expect(try JSONParser.parse(bytes)["aps"]?["alert"] == "01234")
    }

    @Test func truncateAlertBody() throws {
        let limit = overhead(["aps": ["alert": ["body": ""]]]) + 5
        let bytes = try #require(APNsTruncation.fit(["aps": ["alert": ["body": "0123456789"]]], limit: limit))
        #expect(try JSONParser.parse(bytes)["aps"]?["alert"]?["body"] == "01234")
    }

    @Test func truncateLocArgsEvenly() throws {
        let one = try #require(
            APNsTruncation.fit(
                ["aps": ["alert": ["loc-args": ["0123456789"]]]], limit: overhead(["aps": ["alert": ["loc-args": [""]]]]) + 5))
        #expect(try JSONParser.parse(one)["aps"]?["alert"]?["loc-args"] == ["01234"])
        let two = try #require(
            APNsTruncation.fit(
                ["aps": ["alert": ["loc-args": ["0123456789", "abcdefghij"]]]],
                limit: overhead(["aps": ["alert": ["loc-args": ["", ""]]]]) + 10))
        #expect(try JSONParser.parse(two)["aps"]?["alert"]?["loc-args"] == ["01234", "abcde"])
    }

    @Test func multibyteIsNeverSplit() throws {
        let base = overhead(["aps": ["alert": ""]])
        let rabbit = try #require(
            APNsTruncation.fit(["aps": ["alert": .string("🐰" + String(repeating: "x", count: 30))]], limit: base + 20))
        #expect(try JSONParser.parse(rabbit)["aps"]?["alert"] == .string("🐰" + String(repeating: "x", count: 16)))
        let emoji = try #require(APNsTruncation.fit(["aps": ["alert": .string(String(repeating: "😀", count: 30))]], limit: base + 30))
        #expect(try JSONParser.parse(emoji)["aps"]?["alert"] == .string(String(repeating: "😀", count: 7)))
    }

    @Test func canonicalAt240Bytes() throws {
        guard case .send(let p) = APNsPayload.build(APNsPayloadTests.canonical, device: APNsPayloadTests.plain, sendBadgeCounts: true)
        else {
            Issue.record("nothing to send")
            return
        }
        #expect(JSONWriter.serialize(.object(p), style: .python).count == 270)
        let bytes = try #require(APNsTruncation.fit(p, limit: 240))
        #expect(bytes.count == 240)
        #expect(try JSONParser.parse(bytes)["aps"]?["alert"]?["loc-args"] == ["Major Tom", "Mission Co", "I'm floatin"])
    }

    @Test func payloadsWithoutApsOrChoppablesThatAreTooLongDoNotFit() {
        #expect(APNsTruncation.fit(["event_id": .string(String(repeating: "e", count: 5000))]) == nil)
        #expect(APNsTruncation.fit(["aps": ["badge": 1], "x": .string(String(repeating: "e", count: 5000))]) == nil)
    }

    @Test func escapedCharactersCountAsTheyAreSent() throws {
        let p: JSONObject = ["aps": ["alert": .string(String(repeating: "\"", count: 100))]]
        let bytes = try #require(APNsTruncation.fit(p, limit: overhead(["aps": ["alert": ""]]) + 20))
        #expect(try JSONParser.parse(bytes)["aps"]?["alert"] == .string(String(repeating: "\"", count: 10)))
    }
}

@Suite struct APNsDeviceTokenTests {
    @Test func base64BecomesLowercaseHex() {
        #expect(APNsDeviceToken.token(fromPushkey: "spqr", convertToHex: true) == "b29aab")
        #expect(
            APNsDeviceToken.token(fromPushkey: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", convertToHex: true)
                == "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
    }

    @Test func invalidBase64IsRefusedAndRawTokensPassWhenNotConverting() {
        #expect(APNsDeviceToken.token(fromPushkey: "abc", convertToHex: true) == nil)
        // "-" is dropped, as Python does: 11 characters, not base64.
        #expect(APNsDeviceToken.token(fromPushkey: "main-pushkey", convertToHex: true) == nil)
        #expect(APNsDeviceToken.token(fromPushkey: "main-pushkey-1", convertToHex: true) == "99a8a7a6eb2191ecb5")
        #expect(APNsDeviceToken.token(fromPushkey: "", convertToHex: true) == nil)
        #expect(APNsDeviceToken.token(fromPushkey: "cafe01", convertToHex: false) == "cafe01")
    }

    @Test func collapseIdIsAtMost64Bytes() {
        #expect(APNsPushkin.collapseId("$short") == "$short")
        #expect(APNsPushkin.collapseId(String(repeating: "e", count: 200)).utf8.count <= 64)
    }
}

/// The canonical-base64 fast path of `APNsDeviceToken` decodes exactly as Foundation does, and
/// leaves everything else to it.
@Suite struct APNsCanonicalPushkeyTests {
    @Test func canonicalPushkeysDecodeAsFoundationDecodesThem() {
        var random = SystemRandomNumberGenerator()
        for length in 1...40 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let pushkey = Data(bytes).base64EncodedString()
            let fast = pushkey.utf8.withContiguousStorageIfAvailable(APNsDeviceToken.canonicalHex) ?? nil
            #expect(fast == Hex.encode(bytes), "\(pushkey)")
            #expect(APNsDeviceToken.token(fromPushkey: pushkey, convertToHex: true) == Hex.encode(bytes))
        }
    }

    @Test(arguments: ["AAE", "AAE=A===", "AB==", "ABC=", "====", "AA-_", "AAECAwQ FBgc="])
    func anythingElseGoesTheGeneralWay(pushkey: String) {
        let fast = pushkey.utf8.withContiguousStorageIfAvailable(APNsDeviceToken.canonicalHex) ?? nil
        #expect(fast == nil)
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".utf8)
        let general = Data(base64Encoded: Data(pushkey.utf8.filter(alphabet.contains))).map { Hex.encode($0) }
        #expect(APNsDeviceToken.token(fromPushkey: pushkey, convertToHex: true) == (general?.isEmpty == true ? nil : general))
    }
}

/// `APNsLocArgs`: one, two or three arguments, in order, as a collection.
@Suite struct APNsLocArgsTests {
    @Test func holdsItsArgumentsInOrder() {
        #expect(Array(APNsLocArgs("a")) == ["a"])
        #expect(Array(APNsLocArgs("a", "b")) == ["a", "b"])
        #expect(Array(APNsLocArgs("a", "b", "c")) == ["a", "b", "c"])
        #expect(Array(APNsLocArgs("a", nil, "c")) == ["a"])  // no gap: a third needs a second
        #expect(APNsLocArgs("", "").count == 2)
    }
}
