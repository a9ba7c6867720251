package import HeraldCore

/// The bodies Herald sends to Push Kit (docs/compatibility/hms.md, "What is sent"). `data` is
/// always a map of strings: the FCM v1 data map a Matrix client already reads.
package enum HMSMessage {
    /// Push Kit takes at most 4 096 bytes of body, its token list not counted.
    package static let maxBodyBytes = 4096
    /// And at most 1 000 tokens a request.
    package static let maxTokens = 1000

    /// Android (`POST /v1/{app_id}/messages:send`): a data message (`message.data`, the map as
    /// JSON text) with `android.urgency` from the notification's priority and `android.ttl`, then
    /// the app's `android_options` over them; `notification` adds a visible notification
    /// (`android.notification`), as gorush's Huawei messages carry for status-go.
    package static func android(
        data: JSONObject, highPriority: Bool, ttl: Int, options: JSONObject, notification: JSONObject? = nil, tokens: [String]
    ) -> JSONValue {
        var android: JSONObject = ["urgency": .string(highPriority ? "HIGH" : "NORMAL"), "ttl": .string("\(ttl)s")]
        if let notification {
            var shown = notification
            shown["click_action"] = ["type": 3]
            android["notification"] = .object(shown)
        }
        for (key, value) in options { android[key] = value }
        let message: JSONObject = [
            "data": .string(JSONWriter.string(.object(data))), "android": .object(android),
            "token": .array(tokens.map(JSONValue.string)),
        ]
        return ["validate_only": false, "message": .object(message)]
    }

    /// Android, with `message.android` and `message.data` as a sender built them (gorush's).
    package static func android(data: JSONValue, android: JSONObject, tokens: [String]) -> JSONValue {
        let message: JSONObject = ["data": data, "android": .object(android), "token": .array(tokens.map(JSONValue.string))]
        return ["validate_only": false, "message": .object(message)]
    }

    /// HarmonyOS (`POST /v3/{project_id}/messages:send`, `push-type` header): an alert
    /// (`payload.notification`, with the map as `clickAction.data` for the app, a `notifyId` per
    /// room so that a room's newer notification replaces its older one, and the unread count as
    /// the badge), an extension message (the same notification, and the map as `extraData` for
    /// the app's extension) or a background message (`payload.extraData`, the map as JSON text).
    package static func harmony(
        _ type: HMSConfig.PushType, data: JSONObject, alert: (category: String, title: String, body: String), badge: Int64?,
        room: String?, ttl: Int, tokens: [String]
    ) -> JSONValue {
        var notification: JSONObject = [
            "category": .string(alert.category), "title": .string(alert.title), "body": .string(alert.body),
            "clickAction": ["actionType": 0, "data": .object(data)],
        ]
        if let room { notification["notifyId"] = .int(Int64(notifyId(room))) }
        if let badge { notification["badge"] = ["setNum": .int(badge)] }
        let payload: JSONObject
        switch type {
        case .alert:
            payload = ["notification": .object(notification)]
        case .extension:
            // The extension subprocess reads `extraData`; `notification` is what is shown should
            // it not write its own.
            payload = ["notification": .object(notification), "extraData": .string(JSONWriter.string(.object(data)))]
        case .background:
            payload = ["extraData": .string(JSONWriter.string(.object(data)))]
        }
        return [
            "payload": .object(payload), "target": ["token": .array(tokens.map(JSONValue.string))],
            "pushOptions": ["ttl": .int(Int64(ttl))],
        ]
    }

    /// A stable 31-bit id for a room (FNV-1a of its id).
    package static func notifyId(_ room: String) -> Int32 {
        var hash: UInt32 = 2_166_136_261
        for byte in room.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: hash & 0x7FFF_FFFF)
    }

    /// The size Huawei counts: the body without its tokens.
    package static func countedBytes(_ body: JSONValue) -> Int { JSONWriter.serialize(withTokens(body, [])).count }

    /// `body` (Android's or HarmonyOS's) addressed to `tokens`.
    package static func withTokens(_ body: JSONValue, _ tokens: [String]) -> JSONValue {
        guard case .object(var top) = body else { return body }
        let list = JSONValue.array(tokens.map(JSONValue.string))
        if case .object(var message)? = top["message"] {
            message["token"] = list
            top["message"] = .object(message)
        }
        if top["target"] != nil { top["target"] = ["token": list] }
        return .object(top)
    }
}
