import Testing

@testable import HeraldCore

/// `KnownStrings`: a parse hands back the one copy of a string it was given (a configured app id,
/// a notify's longer key) instead of a new one, and the value is the same either way.
@Suite struct KnownStringsTests {
    /// Where a string's bytes live: the same place for two strings that share their storage.
    func storage(_ string: String) -> UnsafePointer<UInt8>? {
        string.utf8.withContiguousStorageIfAvailable { $0.baseAddress } ?? nil
    }

    @Test func aKnownStringIsHandedBackAsTheOneCopy() throws {
        let appId = String(["com.example", "herald", "ios"].joined(separator: "."))
        let known = KnownStrings([appId, "short.app"])
        let body = #"{"app_id": "com.example.herald.ios", "other": "com.example.herald.iox", "x": "com.example.herald.ios\/"}"#
        let parsed = try JSONParser.parse(Array(body.utf8), known: known)
        let shared = try #require(parsed["app_id"]?.stringValue)
        #expect(shared == appId)
        #expect(storage(shared) == storage(appId))
        // The same length with another byte, and an escaped string, are strings of their own.
        let other = try #require(parsed["other"]?.stringValue)
        #expect(other == "com.example.herald.iox")
        #expect(storage(other) != storage(appId))
        #expect(parsed["x"]?.stringValue == "com.example.herald.ios/")
        // Without the table, the same value, in a copy of its own.
        let plain = try JSONParser.parse(Array(body.utf8))
        #expect(plain == parsed)
        #expect(storage(try #require(plain["app_id"]?.stringValue)) != storage(appId))
    }

    @Test func aShortStringIsNeverLookedUpAsItCostsNothing() {
        let known = KnownStrings(["m.room.message", "sender_display_name"])
        #expect(known.string(for: UnsafeBufferPointer(start: nil, count: 0)) == nil)
        Array("m.room.message".utf8).withUnsafeBufferPointer { #expect(known.string(for: $0) == nil) }
        Array("sender_display_name".utf8).withUnsafeBufferPointer { #expect(known.string(for: $0) == "sender_display_name") }
    }

    @Test func aNotifysDevicesShareTheConfiguredAppId() throws {
        let appId = String(["im", "vector", "app", "ios", "prod"].joined(separator: "."))
        let body = #"""
            {"notification": {"event_id": "$e", "sender_display_name": "Major Tom", "type": "m.room.encrypted",
              "devices": [{"app_id": "im.vector.app.ios.prod", "pushkey": "abc"}, {"app_id": "im.vector.app.ios.prod", "pushkey": "def"}]}}
            """#
        let notification = try NotificationParser.parse(
            body: Array(body.utf8), known: NotificationParser.knownStrings(appIds: [appId]))
        #expect(notification.devices.map(\.appId) == [appId, appId])
        #expect(notification.devices.allSatisfy { storage($0.appId) == storage(appId) })
        #expect(notification.type == "m.room.encrypted")
        #expect(notification.senderDisplayName == "Major Tom")
        // What UnifiedPush forwards is every field but `devices`, in order.
        #expect(Array(notification.fields.keys) == ["event_id", "sender_display_name", "type", "devices"])
    }
}
