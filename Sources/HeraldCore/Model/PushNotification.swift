/// A `/_matrix/push/v1/notify` notification, as the Matrix Push Gateway API defines it and as
/// Sygnal reads it. Fields Sygnal never type-checks are kept leniently: a value of the wrong JSON
/// type is treated as absent, where Sygnal would have produced odd output or a 500.
package struct PushNotification: Sendable {
    package var eventId: String?
    package var roomId: String?
    package var type: String?
    package var sender: String?
    package var senderDisplayName: String?
    package var roomName: String?
    package var roomAlias: String?
    package var userIsTarget: Bool
    package var prio: String?
    package var membership: String?
    /// `content` as sent: usually an object, kept whatever its type (FCM legacy copies it as is).
    package var content: JSONValue?
    package var counts: Counts
    package var devices: [Device]
    /// Every field of the notification object as received, in order (`devices` too, which a
    /// gateway that forwards the notification itself, UnifiedPush, leaves out).
    package var fields: JSONObject = [:]

    package struct Counts: Sendable, Equatable {
        package var unread: Int64?
        package var missedCalls: Int64?
        package init(unread: Int64? = nil, missedCalls: Int64? = nil) {
            self.unread = unread
            self.missedCalls = missedCalls
        }
    }

    package init(
        eventId: String? = nil, roomId: String? = nil, type: String? = nil, sender: String? = nil,
        senderDisplayName: String? = nil, roomName: String? = nil, roomAlias: String? = nil,
        userIsTarget: Bool = false, prio: String? = nil, membership: String? = nil, content: JSONValue? = nil,
        counts: Counts = Counts(), devices: [Device] = []
    ) {
        self.eventId = eventId
        self.roomId = roomId
        self.type = type
        self.sender = sender
        self.senderDisplayName = senderDisplayName
        self.roomName = roomName
        self.roomAlias = roomAlias
        self.userIsTarget = userIsTarget
        self.prio = prio
        self.membership = membership
        self.content = content
        self.counts = counts
        self.devices = devices
    }

    /// `content` when it is an object.
    package var contentObject: JSONObject? { content?.objectValue }

    /// `prio` is "low": APNs priority 5, FCM "normal", Web Push `Urgency: low`.
    package var isLowPriority: Bool { prio == "low" }

    /// The room's name, else its alias: the first that is not empty.
    package var roomLabel: String? { Self.firstNonEmpty(roomName, roomAlias) }

    /// The sender's display name, else its id: the first that is not empty.
    package var senderLabel: String? { Self.firstNonEmpty(senderDisplayName, sender) }

    private static func firstNonEmpty(_ first: String?, _ second: String?) -> String? {
        if let first, !first.isEmpty { return first }
        if let second, !second.isEmpty { return second }
        return nil
    }
}

/// One device of a notification: a pusher on the homeserver.
package struct Device: Sendable {
    package var appId: String
    package var pushkey: String
    package var pushkeyTs: Int64?
    /// The pusher's `data`, when present (it must be an object).
    package var data: JSONObject?
    package var tweaks: JSONObject?

    package init(appId: String, pushkey: String, pushkeyTs: Int64? = nil, data: JSONObject? = nil, tweaks: JSONObject? = nil) {
        self.appId = appId
        self.pushkey = pushkey
        self.pushkeyTs = pushkeyTs
        self.data = data
        self.tweaks = tweaks
    }

    /// `tweaks.sound`, validated as a string when the notification was parsed.
    package var sound: String? { tweaks?["sound"]?.stringValue }
}
