import NIOCore
import Testing

@testable import HeraldCore
@testable import Pushkins

/// `APNsPayloadWriter` writes the bytes that `APNsPayload.build` serialised with Python's
/// separators would be, for every shape a notification without `default_payload` takes, and
/// says so when the pusher has one.
@Suite struct APNsPayloadWriterTests {
    /// The written bytes, and the tree's serialised bytes (nil for "nothing to send").
    func both(_ n: PushNotification, _ device: Device, badges: Bool = true) -> (written: String?, tree: String?) {
        var buffer = ByteBuffer()
        let result = APNsPayloadWriter.write(n, device: device, sendBadgeCounts: badges, into: &buffer)
        let written = result == .written ? String(buffer: buffer) : nil
        if result == .nothingToSend { #expect(buffer.readableBytes == 0) }
        guard case .send(let payload) = APNsPayload.build(n, device: device, sendBadgeCounts: badges) else { return (written, nil) }
        return (written, String(decoding: JSONWriter.serialize(.object(payload), style: .python), as: UTF8.self))
    }

    static let plain = Device(appId: "com.example.apns", pushkey: "spqr")

    static var sounding: Device {
        var device = plain
        device.tweaks = ["sound": "ping \"loud\""]
        return device
    }

    /// Every loc-key branch, event-id-only mode, badges on and off, and text that must be escaped.
    static let notifications: [PushNotification] = {
        let canonical = APNsPayloadTests.canonical
        var all: [PushNotification] = [canonical]
        func variant(_ change: (inout PushNotification) -> Void) {
            var n = canonical
            change(&n)
            all.append(n)
        }
        variant { $0.content = ["msgtype": "m.image", "body": "cat.png"] }
        variant { $0.content = ["msgtype": "m.emote", "body": "waves\n\t\u{1}\u{7f} \\ \"é\" 🚀"] }
        variant { $0.content = ["msgtype": "m.text", "body": ""] }
        variant { $0.roomName = nil }
        variant {
            $0.roomName = nil
            $0.roomAlias = nil
        }
        variant {
            $0.roomName = nil
            $0.roomAlias = nil
            $0.content = ["msgtype": "m.emote", "body": "x"]
        }
        variant { $0.senderDisplayName = String(repeating: "ü", count: 1100) }
        variant {
            $0.sender = ""
            $0.senderDisplayName = nil
        }
        variant { $0.roomId = "" }
        variant { $0.eventId = nil }
        variant { $0.counts = .init() }
        variant { $0.counts = .init(unread: -3) }
        variant { $0.counts = .init(unread: .max, missedCalls: 1) }
        variant { $0.counts = .init(unread: .min, missedCalls: -1) }
        variant {
            $0.type = "m.call.invite"
            $0.content = ["offer": ["sdp": "v=0 m=video"]]
        }
        variant { $0.type = "m.call.invite" }
        variant {
            $0.type = "m.room.member"
            $0.membership = "invite"
            $0.userIsTarget = true
        }
        variant {
            $0.type = "m.room.member"
            $0.membership = "invite"
            $0.userIsTarget = true
            $0.roomName = nil
        }
        variant { $0.type = "m.room.member" }
        variant { $0.type = "org.example.custom" }
        variant { $0.type = nil }
        variant {
            $0.type = ""
            $0.roomId = nil
            $0.counts = .init(missedCalls: 4)
        }
        variant {
            $0.type = nil
            $0.eventId = nil
        }
        variant {
            $0.type = nil
            $0.eventId = nil
            $0.counts = .init()
        }
        return all
    }()

    @Test(arguments: Self.notifications.indices)
    func theWrittenPayloadIsTheTreesBytes(_ index: Int) {
        let n = Self.notifications[index]
        for device in [Self.plain, Self.sounding, Device(appId: "a", pushkey: "p", data: ["format": "x"])] {
            for badges in [true, false] {
                let (written, tree) = both(n, device, badges: badges)
                #expect(written == tree, "notification \(index), badges \(badges)")
            }
        }
    }

    @Test func theCanonicalPayloadIsWrittenAsSygnalWritesIt() {
        let (written, _) = both(APNsPayloadTests.canonical, Self.plain)
        #expect(
            written
                == #"{"aps": {"alert": {"loc-key": "MSG_FROM_USER_IN_ROOM_WITH_CONTENT", "loc-args": ["Major Tom", "Mission Control", "#
                + #""I'm floating in a most peculiar way."]}, "badge": 3}, "room_id": "!slw48wfj34rtnrf:example.com", "#
                + #""event_id": "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs"}"#)
    }

    /// A badge past a 64-bit integer is held at its bound, rather than ending the process.
    @Test func aBadgeSumBeyondSixtyFourBitsIsHeldAtItsBound() {
        var n = APNsPayloadTests.canonical
        n.counts = .init(unread: .max, missedCalls: 1)
        #expect(APNsPayload.badge(n, sendBadgeCounts: true) == .max)
        n.counts = .init(unread: .min, missedCalls: -1)
        #expect(APNsPayload.badge(n, sendBadgeCounts: true) == .min)
        n.counts = .init(unread: 2, missedCalls: 1)
        #expect(APNsPayload.badge(n, sendBadgeCounts: true) == 3)
        #expect(APNsPayload.badge(n, sendBadgeCounts: false) == nil)
    }

    @Test func aPusherWithADefaultPayloadIsLeftToTheTree() {
        var buffer = ByteBuffer()
        let result = APNsPayloadWriter.write(
            APNsPayloadTests.canonical, device: APNsPayloadTests.withDefault, sendBadgeCounts: true, into: &buffer)
        #expect(result == .needsTree)
        #expect(buffer.readableBytes == 0)
    }
}
