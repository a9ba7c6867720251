package import HeraldCore
package import NIOCore

/// Request bodies for FCM (docs/compatibility/fcm.md).
package enum FCMMessage {
    /// `{"message": {…fcm_options, data, android.priority, token | fid}}` for HTTP v1, with data values
    /// made strings and an `aps` object routed to `apns.payload.aps`, written straight into the
    /// buffer it is sent from.
    ///
    /// The message is the app's `fcm_options` with Herald's members set over them: a member the
    /// options have keeps its place and takes Herald's value (`android` keeps its own members and
    /// gains `priority`), the others follow in the order `data`, `android`, `apns`,
    /// `notification`, then the target (`token` or `fid`; the options' other one is left out). This
    /// is the order the same members set in a `JSONObject` would
    /// have; it is written without building that object (docs/operations.md, "The hot path as
    /// values").
    package static func v1(
        data: JSONObject, target: FCMTarget, notification n: PushNotification, options: JSONObject, visible: Bool,
        badgePriority: BadgePriority = .normal
    ) -> ByteBuffer {
        let (strings, aps) = FCMData.stringify(data)
        let priority: JSONValue = .string(badgePriority.isHigh(n) ? "high" : "normal")
        // The options' own `notification` is kept; Herald's is added only where they have none.
        let block = visible && options.index(forKey: "notification") == nil ? visibleBlock(n) : nil
        var out = ByteBufferAllocator().buffer(capacity: 1024)
        out.writeStaticString(#"{"message":{"#)
        var written = 0
        func key(_ key: String) {
            if written > 0 { out.writeInteger(UInt8(ascii: ",")) }
            written += 1
            JSONWriter.writeString(key, into: &out)
            out.writeInteger(UInt8(ascii: ":"))
        }
        func value(_ value: JSONValue) { JSONWriter.write(value, style: .compact, into: &out) }
        func android(_ own: JSONValue?) {
            guard case .object(var members)? = own else {
                out.writeStaticString(#"{"priority":"#)
                value(priority)
                out.writeInteger(UInt8(ascii: "}"))
                return
            }
            // The app's own `android` options (rare): `priority` set among them, in its place if
            // they have one.
            members["priority"] = priority
            value(.object(members))
        }
        let other = target.otherMember
        for (name, item) in options where name != other {
            key(name)
            switch name {
            case "data": value(.object(strings))
            case "android": android(item)
            case "apns": value(aps.map { .object(apnsBlock(item, aps: $0)) } ?? item)
            case target.member: value(.string(target.value))
            default: value(item)
            }
        }
        if options.index(forKey: "data") == nil {
            key("data")
            value(.object(strings))
        }
        if options.index(forKey: "android") == nil {
            key("android")
            android(nil)
        }
        if let aps, options.index(forKey: "apns") == nil {
            key("apns")
            value(.object(apnsBlock(nil, aps: aps)))
        }
        if let block {
            key("notification")
            value(.object(block))
        }
        if options.index(forKey: target.member) == nil {
            key(target.member)
            value(.string(target.value))
        }
        out.writeStaticString("}}")
        return out
    }

    /// The options' `apns` block with a `default_payload`'s `aps` members set in its
    /// `payload.aps` (rare: only an iOS-style default payload has one).
    static func apnsBlock(_ own: JSONValue?, aps: JSONObject) -> JSONObject {
        var apns = own?.objectValue ?? JSONObject()
        var payload = apns["payload"]?.objectValue ?? JSONObject()
        var merged = payload["aps"]?.objectValue ?? JSONObject()
        for (key, value) in aps { merged[key] = value }
        payload["aps"] = .object(merged)
        apns["payload"] = .object(payload)
        return apns
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
