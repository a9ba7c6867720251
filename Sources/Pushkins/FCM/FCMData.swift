package import HeraldCore

/// The FCM `data` map as Sygnal builds it (docs/compatibility/fcm.md, "The data map"), for both API versions.
package enum FCMData {
    package enum APIVersion: String, Sendable { case v1, legacy }

    package static let maxFieldBytes = 1024
    nonisolated(unsafe) static let fields: [(String, KeyPath<PushNotification, String?>)] = [
        ("event_id", \.eventId), ("type", \.type), ("sender", \.sender), ("room_name", \.roomName), ("room_alias", \.roomAlias),
        ("membership", \.membership), ("sender_display_name", \.senderDisplayName),
    ]

    package enum Result: Equatable, Sendable {
        case send(JSONObject)
        /// No room, no event and no counts: nothing worth waking the app for.
        case nothingToSend
        /// `default_payload` is there but not an object: the pushkey is rejected.
        case invalidDefaultPayload
    }

    package static func build(_ n: PushNotification, device: Device, version: APIVersion, sendBadgeCounts: Bool) -> Result {
        // Room for every field below (the seven named ones, room, prio, counts and a few of
        // `content`'s), reserved once.
        var data = JSONObject(minimumCapacity: 16)
        if let raw = device.data?["default_payload"] {
            guard case .object(let defaults) = raw else { return .invalidDefaultPayload }
            data = defaults
        }
        for (key, path) in fields {
            if let value = n[keyPath: path] { data[key] = .string(truncate(value)) }
        }
        // v1 flattens `content` (the notification's, else default_payload's) into `content_*`
        // strings after `room_id`; it is never put in the map only to be taken out again.
        var flattened: JSONObject?
        if version == .v1, case .object(let content)? = n.content ?? data["content"] {
            flattened = content
            data.removeValue(forKey: "content")
        } else if let content = n.content {
            data["content"] = content
        }
        if let room = n.roomId { data["room_id"] = .string(truncate(room)) }

        if let content = flattened {
            for (key, value) in content {
                if case .string(let s) = value { data["content_\(key)"] = .string(truncate(s)) }
            }
        }
        data["prio"] = .string(n.isLowPriority ? "normal" : "high")

        var hasCounts = false
        if sendBadgeCounts {
            for (key, count) in [("unread", n.counts.unread), ("missed_calls", n.counts.missedCalls)] {
                guard let count, count != 0 else { continue }
                data[key] = version == .v1 ? .string(String(count)) : .int(count)
                hasCounts = true
            }
        }
        if !(data["room_id"]?.isTruthy ?? false) && !(data["event_id"]?.isTruthy ?? false) && !hasCounts {
            return .nothingToSend
        }
        return .send(data)
    }

    /// At most 1024 UTF-8 bytes: longer text keeps its first 1021 bytes (no partial character)
    /// and gains "…".
    package static func truncate(_ s: String) -> String {
        guard s.utf8.count > maxFieldBytes else { return s }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in s.unicodeScalars {
            let width = UTF8.width(scalar)
            if bytes + width > maxFieldBytes - 3 { break }
            bytes += width
            kept.append(scalar)
        }
        return String(kept) + "…"
    }

    /// FCM v1 wants `map<string, string>`: Sygnal copies nested `default_payload` values as they
    /// are and FCM refuses the message (Sygnal issues 365, 367). An iOS-style `aps` object is
    /// moved to `apns.payload.aps`; any other non-string value becomes its JSON text; null is dropped.
    package static func stringify(_ data: JSONObject) -> (data: JSONObject, aps: JSONObject?) {
        // The usual map (no default_payload) is strings only and is sent as it is.
        if data.values.allSatisfy({ $0.stringValue != nil }) { return (data, nil) }
        var result = JSONObject()
        var aps: JSONObject?
        for (key, value) in data {
            switch value {
            case .string: result[key] = value
            case .null: continue
            case .object(let object) where key == "aps": aps = object
            default: result[key] = .string(JSONWriter.string(value))
            }
        }
        return (result, aps)
    }
}
