/// Turns a `/notify` body into a `PushNotification`, with Sygnal's checks, check order and messages
/// (docs/compatibility/matrix.md, "Validation"). Shapes that crash Sygnal with a 500 are refused here with a 400 instead.
package enum NotificationParser {
    package enum Failure: Error, Equatable, Sendable {
        /// Not UTF-8, not JSON, NaN/Infinity, or nested too deep: `M_NOT_JSON`.
        case notJSON
        /// Valid JSON of the wrong shape: `M_BAD_JSON` with Sygnal's message.
        case invalid(String)

        package var message: String {
            switch self {
            case .notJSON: return "Expected JSON request body"
            case .invalid(let message): return message
            }
        }
    }

    /// `known`: strings the notify repeats (`knownStrings(appIds:)`), shared rather than made again.
    package static func parse(body: some Collection<UInt8>, known: KnownStrings = .empty) throws(Failure) -> PushNotification {
        let root: JSONValue
        do {
            root = try JSONParser.parse(body, known: known)
        } catch {
            throw .notJSON
        }
        return try parse(root)
    }

    package static func parse(_ root: JSONValue) throws(Failure) -> PushNotification {
        guard case .object(let notification)? = root["notification"] else {
            throw .invalid("Invalid notification: expecting object in 'notification' key")
        }
        guard case .array(let rawDevices)? = notification["devices"] else {
            throw .invalid("Expected list in 'devices' key")
        }
        let counts = try parseCounts(notification["counts"])
        var devices: [Device] = []
        devices.reserveCapacity(rawDevices.count)
        for raw in rawDevices {
            devices.append(try parseDevice(raw))
        }
        guard !devices.isEmpty else { throw .invalid("No devices in notification") }

        func string(_ key: String) -> String? { notification[key]?.stringValue }
        var parsed = PushNotification(
            eventId: string("event_id"),
            roomId: string("room_id"),
            type: string("type"),
            sender: string("sender"),
            senderDisplayName: string("sender_display_name"),
            roomName: string("room_name"),
            roomAlias: string("room_alias"),
            userIsTarget: notification["user_is_target"]?.isTruthy ?? false,
            prio: string("prio"),
            membership: string("membership"),
            content: notification["content"].flatMap { $0 == .null ? nil : $0 },
            counts: counts,
            devices: devices
        )
        parsed.fields = notification
        return parsed
    }

    /// The strings a notify repeats that are too long to be held inline: its longer keys and
    /// common values, and `appIds` (the configured ones, which every device names).
    package static func knownStrings(appIds: some Sequence<String>) -> KnownStrings {
        KnownStrings(["sender_display_name", "m.room.encrypted", "org.matrix.custom.html"] + Array(appIds))
    }

    private static func parseCounts(_ value: JSONValue?) throws(Failure) -> PushNotification.Counts {
        switch value {
        case nil, .array?:
            // Absent, or a list (which Sygnal treats as "no counts").
            return PushNotification.Counts()
        case .object(let counts)?:
            var result = PushNotification.Counts()
            if let raw = counts["unread"] {
                guard let number = raw.pythonInt else { throw .invalid("unread is of invalid type") }
                result.unread = number
            }
            if let raw = counts["missed_calls"] {
                guard let number = raw.pythonInt else { throw .invalid("missed_calls is of invalid type") }
                result.missedCalls = number
            }
            return result
        default:
            throw .invalid("counts is of invalid type")
        }
    }

    private static func parseDevice(_ raw: JSONValue) throws(Failure) -> Device {
        guard case .object(let device) = raw, let appId = device["app_id"]?.stringValue else {
            throw .invalid("Device with missing or non-string app_id")
        }
        guard let pushkey = device["pushkey"]?.stringValue else {
            throw .invalid("Device with missing or non-string pushkey")
        }
        var pushkeyTs: Int64?
        if let raw = device["pushkey_ts"] {
            guard let ts = raw.pythonInt else { throw .invalid("pushkey_ts is of invalid type") }
            pushkeyTs = ts
        }
        var data: JSONObject?
        if let raw = device["data"] {
            guard case .object(let object) = raw else { throw .invalid("data is of invalid type") }
            data = object
        }
        var tweaks: JSONObject?
        if let raw = device["tweaks"] {
            guard case .object(let object) = raw else { throw .invalid("tweaks is of invalid type") }
            if let sound = object["sound"], sound.stringValue == nil {
                throw .invalid("sound is of invalid type")
            }
            tweaks = object
        }
        return Device(appId: appId, pushkey: pushkey, pushkeyTs: pushkeyTs, data: data, tweaks: tweaks)
    }
}
