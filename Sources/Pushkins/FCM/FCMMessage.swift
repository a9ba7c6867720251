package import HeraldCore

/// Request bodies for FCM (docs/compatibility/fcm.md).
package enum FCMMessage {
    /// `{"message": {…fcm_options, data, android.priority, token}}` for HTTP v1, with data values
    /// made strings and an `aps` object routed to `apns.payload.aps`.
    package static func v1(
        data: JSONObject, token: String, notification n: PushNotification, options: JSONObject, visible: Bool,
        badgePriority: BadgePriority = .normal
    ) -> JSONValue {
        var message = options
        message.reserveCapacity(options.count + 5)  // data, android, apns, notification, token
        let (strings, aps) = FCMData.stringify(data)
        message["data"] = .object(strings)
        var android = message["android"]?.objectValue ?? JSONObject(minimumCapacity: 1)
        android["priority"] = .string(badgePriority.isHigh(n) ? "high" : "normal")
        message["android"] = .object(android)
        if let aps {
            var apns = message["apns"]?.objectValue ?? JSONObject()
            var payload = apns["payload"]?.objectValue ?? JSONObject()
            var merged = payload["aps"]?.objectValue ?? JSONObject()
            for (key, value) in aps { merged[key] = value }
            payload["aps"] = .object(merged)
            apns["payload"] = .object(payload)
            message["apns"] = .object(apns)
        }
        if visible, message["notification"] == nil, let block = visibleBlock(n) {
            message["notification"] = .object(block)
        }
        message["token"] = .string(token)
        return ["message": .object(message)]
    }

    /// `{…fcm_options, data, priority, to | registration_ids}` for the legacy API.
    package static func legacy(
        data: JSONObject, tokens: [String], notification n: PushNotification, options: JSONObject, badgePriority: BadgePriority = .normal
    ) -> JSONValue {
        var body = options
        body["data"] = .object(data)
        body["priority"] = .string(badgePriority.isHigh(n) ? "high" : "normal")
        if tokens.count == 1 {
            body["to"] = .string(tokens[0])
        } else {
            body["registration_ids"] = .array(tokens.map { .string($0) })
        }
        return .object(body)
    }

    /// A title (room, else sender) and body (message text) for apps that want FCM to show the
    /// notification itself. Badge-only updates get none.
    static func visibleBlock(_ n: PushNotification) -> JSONObject? {
        guard n.eventId?.isEmpty == false else { return nil }
        let sender = n.senderLabel
        let room = n.roomLabel
        var block = JSONObject()
        if let title = room ?? sender { block["title"] = .string(FCMData.truncate(title)) }
        if case .string(let text)? = n.contentObject?["body"] {
            block["body"] = .string(FCMData.truncate(room != nil && sender != nil ? "\(sender ?? ""): \(text)" : text))
        } else {
            block["body"] = .string(n.type == "m.room.encrypted" ? "New encrypted message" : "New message")
        }
        return block
    }
}
