import HeraldCore
import Pushkins

/// What gorush 1.22 sends to FCM v1 for a notification (docs/status-protocol.md, "gorush's
/// fields"): its `notification`, `android`, `apns`, `webpush`, `fcm_options` and string `data`,
/// with gorush's own additions (the title, message and image; `mutable_content`,
/// `content_available` and `sound` for iOS devices reached through FCM; `priority`).
enum GorushFCM {
    /// The v1 `message` for one registration token, without the token.
    static func message(_ n: GorushNotification) -> JSONObject {
        var notification = n.notification
        var apns = n.apns
        var android = n.android
        if !n.title.isEmpty || !n.message.isEmpty || !n.image.isEmpty {
            var block = notification ?? [:]
            if !n.title.isEmpty { block["title"] = .string(n.title) }
            if !n.message.isEmpty { block["body"] = .string(n.message) }
            if !n.image.isEmpty { block["image"] = .string(n.image) }
            notification = block
            if n.mutableContent { apns = ["payload": ["aps": ["mutable-content": 1]]] }
        }
        if n.contentAvailable {
            // gorush replaces the APNs block: a background push at priority 5, the data in `aps`.
            var aps: JSONObject = ["content-available": 1]
            for (key, value) in n.data { aps[key] = value }
            apns = ["headers": ["apns-priority": "5"], "payload": ["aps": .object(aps)]]
        }
        if case .string(let sound)? = n.sound {
            var block = apns ?? [:]
            var payload = block["payload"]?.objectValue ?? [:]
            var aps = payload["aps"]?.objectValue ?? [:]
            aps["sound"] = .string(sound)
            payload["aps"] = .object(aps)
            block["payload"] = .object(payload)
            apns = block
            if android == nil {
                var config: JSONObject = ["notification": ["sound": .string(sound)]]
                if !n.priority.isEmpty { config["priority"] = .string(n.priority) }
                android = config
            }
        }
        if !n.priority.isEmpty {
            var config = android ?? [:]
            if (config["priority"]?.stringValue ?? "").isEmpty { config["priority"] = .string(n.priority) }
            android = config
        }
        var message: JSONObject = [:]
        if let notification { message["notification"] = .object(notification) }
        if let android { message["android"] = .object(wire(android: android)) }
        if let webpush = n.webpush { message["webpush"] = .object(webpush) }
        if let apns { message["apns"] = .object(apns) }
        if let options = n.fcmOptions { message["fcm_options"] = .object(options) }
        if !n.data.isEmpty { message["data"] = .object(FCMData.stringify(n.data).data) }
        return message
    }

    /// The Firebase Admin SDK's `AndroidConfig`, as gorush's clients write it, in FCM v1's JSON:
    /// `priority` is `HIGH` or `NORMAL`, a numeric `notification.notification_priority` is named
    /// (`PRIORITY_MIN` … `PRIORITY_MAX`); the rest has the same names on both sides.
    static func wire(android: JSONObject) -> JSONObject {
        var config = android
        if let priority = config["priority"]?.stringValue { config["priority"] = .string(priority.uppercased()) }
        if case .object(var notification)? = config["notification"], case .int(let level)? = notification["notification_priority"] {
            let names = [1: "PRIORITY_MIN", 2: "PRIORITY_LOW", 3: "PRIORITY_DEFAULT", 4: "PRIORITY_HIGH", 5: "PRIORITY_MAX"]
            notification["notification_priority"] = names[Int(level)].map(JSONValue.string)
            if notification["notification_priority"] == nil { notification.removeValue(forKey: "notification_priority") }
            config["notification"] = .object(notification)
        }
        return config
    }
}

/// What gorush 1.22 sends to Huawei Push Kit's Android API for a notification: `android` with
/// `urgency` (HIGH for `priority: high`, else NORMAL), `collapse_key`, `category`, `ttl`,
/// `bi_tag`, `fast_app_target`, `huawei_notification` as `android.notification` with the title,
/// message, image and sound over it, and `huawei_data` as the message's `data`.
enum GorushHMS {
    static func message(_ n: GorushNotification, token: String) -> HMSRawMessage {
        var android: JSONObject = ["urgency": .string(n.priority == "high" ? "HIGH" : "NORMAL")]
        if n.huaweiCollapseKey != 0 { android["collapse_key"] = .int(Int64(n.huaweiCollapseKey)) }
        if !n.category.isEmpty { android["category"] = .string(n.category) }
        if !n.huaweiTTL.isEmpty { android["ttl"] = .string(n.huaweiTTL) }
        if !n.biTag.isEmpty { android["bi_tag"] = .string(n.biTag) }
        if n.fastAppTarget != 0 { android["fast_app_target"] = .int(Int64(n.fastAppTarget)) }
        var notification = n.huaweiNotification
        if notification != nil, notification?["click_action"] == nil { notification?["click_action"] = ["type": 3] }
        if !n.message.isEmpty || !n.title.isEmpty || !n.image.isEmpty || n.sound?.stringValue?.isEmpty == false {
            var block = notification ?? ["click_action": ["type": 3]]
            if !n.message.isEmpty { block["body"] = .string(n.message) }
            if !n.title.isEmpty { block["title"] = .string(n.title) }
            if !n.image.isEmpty { block["image"] = .string(n.image) }
            if let sound = n.sound?.stringValue, !sound.isEmpty { block["sound"] = .string(sound) }
            notification = block
        }
        if var block = notification, block["sound"] == nil {
            block["default_sound"] = true
            notification = block
        }
        if let notification { android["notification"] = .object(notification) }
        return HMSRawMessage(
            title: n.title.isEmpty ? nil : n.title, body: n.message, data: n.data, token: token, android: android,
            dataText: n.huaweiData.isEmpty ? nil : n.huaweiData)
    }
}
