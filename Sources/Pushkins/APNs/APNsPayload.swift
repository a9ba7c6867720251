package import HeraldCore

/// The JSON body Sygnal sends to APNs for a notification (docs/compatibility/apns.md, "Payload"), plus the
/// `tweaks.sound` → `aps.sound` fix of Sygnal issue 107.
package enum APNsPayload {
    package enum Result: Equatable, Sendable {
        case send(JSONObject)
        /// Neither an alert nor a badge: nothing to send, and not a rejection.
        case nothingToSend
    }

    package static let maxFieldCodePoints = 1024

    package static func build(_ n: PushNotification, device: Device, sendBadgeCounts: Bool) -> Result {
        let defaultPayload = device.data?["default_payload"]?.objectValue
        if let eventId = n.eventId, !eventId.isEmpty, n.type?.isEmpty ?? true {
            // Event-id-only mode: the app fetches the event itself.
            var payload = defaultPayload ?? JSONObject()
            if let room = n.roomId, !room.isEmpty { payload["room_id"] = .string(room) }
            payload["event_id"] = .string(eventId)
            if sendBadgeCounts {
                if let unread = n.counts.unread { payload["unread_count"] = .int(unread) }
                if let missed = n.counts.missedCalls { payload["missed_calls"] = .int(missed) }
            }
            return .send(payload)
        }

        let alert = locKey(n)
        let badge = badge(n, sendBadgeCounts: sendBadgeCounts)
        if alert == nil && badge == nil { return .nothingToSend }

        // Sized for what is added below, so that each object is allocated once: `aps`, `room_id`
        // and `event_id`; `alert`, `sound` and `badge`; `loc-key` and `loc-args`.
        var payload = JSONObject(minimumCapacity: 3)
        if let type = n.type, !type.isEmpty, device.data != nil, let defaultPayload { payload = defaultPayload }
        var aps = payload["aps"]?.objectValue ?? JSONObject(minimumCapacity: 3)
        if let (key, args) = alert {
            var alertObject = aps["alert"]?.objectValue ?? JSONObject(minimumCapacity: 2)
            alertObject["loc-key"] = .string(key)
            alertObject["loc-args"] = .array(args.map { .string($0) })
            aps["alert"] = .object(alertObject)
            if let sound = device.sound, !sound.isEmpty { aps["sound"] = .string(sound) }
        }
        if let badge { aps["badge"] = .int(badge) }
        payload["aps"] = .object(aps)
        if alert != nil {
            if let room = n.roomId, !room.isEmpty { payload["room_id"] = .string(room) }
            if let event = n.eventId, !event.isEmpty { payload["event_id"] = .string(event) }
        }
        return .send(payload)
    }

    /// `aps.badge`: the unread count plus the missed calls, when either is given and badges are
    /// sent. A sum beyond a 64-bit integer is held at its bound (docs/compatibility/apns.md,
    /// "Payload"): Python would send the exact number, which no badge can show.
    static func badge(_ n: PushNotification, sendBadgeCounts: Bool) -> Int64? {
        guard sendBadgeCounts, n.counts.unread != nil || n.counts.missedCalls != nil else { return nil }
        let unread = n.counts.unread ?? 0
        let (sum, overflow) = unread.addingReportingOverflow(n.counts.missedCalls ?? 0)
        guard overflow else { return sum }
        return unread < 0 ? .min : .max
    }

    /// The loc-key and its arguments (docs/compatibility/apns.md), or nil for none.
    package static func locKey(_ n: PushNotification) -> (String, APNsLocArgs)? {
        guard let type = n.type, !type.isEmpty else { return nil }
        let from: String
        if (n.sender?.isEmpty ?? true) && (n.senderDisplayName?.isEmpty ?? true) {
            from = " "
        } else {
            from = clip(n.senderDisplayName ?? n.sender ?? " ")
        }
        let room = n.roomLabel.map(clip)

        switch type {
        case "m.room.message", "m.room.encrypted":
            var body: String?
            var msgtype: String?
            if let content = n.contentObject, content["msgtype"] != nil, case .string(let text)? = content["body"] {
                body = text
                msgtype = content["msgtype"]?.stringValue
                // An empty body is no content, as Sygnal treats it (an image keeps its own rule).
                if text.isEmpty && msgtype != "m.image" { body = nil }
            }
            if let room {
                guard let body else { return ("MSG_FROM_USER_IN_ROOM", APNsLocArgs(from, room)) }
                switch msgtype {
                case "m.image": return ("IMAGE_FROM_USER_IN_ROOM", APNsLocArgs(from, body, room))
                case "m.emote": return ("ACTION_FROM_USER_IN_ROOM", APNsLocArgs(room, from, body))
                default: return ("MSG_FROM_USER_IN_ROOM_WITH_CONTENT", APNsLocArgs(from, room, body))
                }
            }
            guard let body else { return ("MSG_FROM_USER", APNsLocArgs(from)) }
            switch msgtype {
            case "m.image": return ("IMAGE_FROM_USER", APNsLocArgs(from, body))
            case "m.emote": return ("ACTION_FROM_USER", APNsLocArgs(from, body))
            default: return ("MSG_FROM_USER_WITH_CONTENT", APNsLocArgs(from, body))
            }
        case "m.call.invite":
            let sdp = n.contentObject?["offer"]?["sdp"]?.stringValue ?? ""
            return (sdp.contains("m=video") ? "VIDEO_CALL_FROM_USER" : "VOICE_CALL_FROM_USER", APNsLocArgs(from))
        case "m.room.member":
            guard n.userIsTarget, n.membership == "invite" else { return nil }
            if let name = n.roomName, !name.isEmpty { return ("USER_INVITE_TO_NAMED_ROOM", APNsLocArgs(from, name)) }
            if let alias = n.roomAlias, !alias.isEmpty { return ("USER_INVITE_TO_NAMED_ROOM", APNsLocArgs(from, alias)) }
            return ("USER_INVITE_TO_CHAT", APNsLocArgs(from))
        default:
            return ("MSG_FROM_USER", APNsLocArgs(from))
        }
    }

    /// The first 1024 code points, no ellipsis (as Sygnal cuts names).
    static func clip(_ s: String) -> String {
        let scalars = s.unicodeScalars
        guard scalars.count > maxFieldCodePoints else { return s }
        return String(String.UnicodeScalarView(scalars.prefix(maxFieldCodePoints)))
    }
}
