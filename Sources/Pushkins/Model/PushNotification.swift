/// A `/_matrix/push/v1/notify` notification, as the Matrix Push Gateway API defines it and as
/// Sygnal reads it. Fields Sygnal never type-checks are kept leniently: a value of the wrong JSON
/// type is treated as absent, where Sygnal would have produced odd output or a 500.
public struct PushNotification: Sendable {
    public var eventId: String?
    public var roomId: String?
    public var type: String?
    public var sender: String?
    public var senderDisplayName: String?
    public var roomName: String?
    public var roomAlias: String?
    public var userIsTarget: Bool
    public var prio: String?
    public var membership: String?
    /// `content` as sent: usually an object, kept whatever its type (FCM legacy copies it as is).
    public var content: JSONValue?
    public var counts: Counts
    public var devices: [Device]
    /// Every field of the notification object as received, in order, without `devices`: what a
    /// gateway that forwards the notification itself (UnifiedPush) sends on.
    public var fields: JSONObject = [:]

    public struct Counts: Sendable, Equatable {
        public var unread: Int64?
        public var missedCalls: Int64?
        public init(unread: Int64? = nil, missedCalls: Int64? = nil) {
            self.unread = unread
            self.missedCalls = missedCalls
        }
    }

    public init(
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
    public var contentObject: JSONObject? { content?.objectValue }

    /// `prio` is "low": APNs priority 5, FCM "normal", Web Push `Urgency: low`.
    public var isLowPriority: Bool { prio == "low" }
}

/// One device of a notification: a pusher on the homeserver.
public struct Device: Sendable {
    public var appId: String
    public var pushkey: String
    public var pushkeyTs: Int64?
    /// The pusher's `data`, when present (it must be an object).
    public var data: JSONObject?
    public var tweaks: JSONObject?

    public init(appId: String, pushkey: String, pushkeyTs: Int64? = nil, data: JSONObject? = nil, tweaks: JSONObject? = nil) {
        self.appId = appId
        self.pushkey = pushkey
        self.pushkeyTs = pushkeyTs
        self.data = data
        self.tweaks = tweaks
    }

    /// `tweaks.sound`, validated as a string when the notification was parsed.
    public var sound: String? { tweaks?["sound"]?.stringValue }
}
