import Foundation
package import HeraldCore

/// The JSON a Web Push subscriber receives (docs/compatibility/webpush.md), kept within the 3993 bytes one
/// `aes128gcm` record of a 4096-byte push message can carry.
package enum WebPushPayload {
    nonisolated(unsafe) static let copiedFields: [(String, KeyPath<PushNotification, String?>)] = [
        ("room_id", \.roomId), ("room_name", \.roomName), ("room_alias", \.roomAlias), ("membership", \.membership),
        ("event_id", \.eventId), ("sender", \.sender), ("sender_display_name", \.senderDisplayName),
    ]

    package static func build(_ notification: PushNotification, defaultPayload: JSONObject?) -> JSONObject {
        var payload = defaultPayload ?? JSONObject()
        // Room for every key set below (the copied fields, `user_is_target`, `type`, the two
        // counts, `content`): reserved once, not grown by doubling.
        payload.reserveCapacity(payload.count + copiedFields.count + 5)
        for (key, path) in copiedFields {
            if let value = notification[keyPath: path], !value.isEmpty { payload[key] = .string(value) }
            if key == "sender_display_name", notification.userIsTarget { payload["user_is_target"] = .bool(true) }
        }
        if let type = notification.type, !type.isEmpty { payload["type"] = .string(type) }
        if let unread = notification.counts.unread { payload["unread"] = .int(unread) }
        if let missed = notification.counts.missedCalls { payload["missed_calls"] = .int(missed) }
        if var content = notification.contentObject, !content.isEmpty {
            content.removeValue(forKey: "formatted_body")
            if case .string(let body)? = content["body"], body.unicodeScalars.count > 1000 {
                content["body"] = .string(String(String.UnicodeScalarView(body.unicodeScalars.prefix(999))) + "…")
            }
            if case .string(let ciphertext)? = content["ciphertext"], ciphertext.count > 2000 {
                content.removeValue(forKey: "ciphertext")
            }
            payload["content"] = .object(content)
        }
        return payload
    }

    /// Declarative Web Push (WebKit, Safari 18.4): `web_push: 8030` and a `notification` the
    /// browser shows by itself, beside the fields a service worker reads (`mutable: true` lets a
    /// service worker still handle the push). The title is the room's name, else the sender's; the
    /// body the message's text when the homeserver sent it; `tag` the room, so that a room's newer
    /// notification replaces the older; `app_badge` the unread count; `silent` for low priority.
    package static func declarative(_ payload: JSONObject, _ notification: PushNotification, navigate template: String) -> JSONObject {
        let sender = notification.senderDisplayName.flatMap { $0.isEmpty ? nil : $0 } ?? notification.sender
        let room = notification.roomName.flatMap { $0.isEmpty ? nil : $0 } ?? notification.roomAlias
        // What a notification shows is short: the title and body are cut here, so that the
        // message's own strings, not these, are what a message over the limit loses.
        var shown: JSONObject = ["title": .string(clipped(room ?? sender ?? "New message", to: 100))]
        if case .string(let text)? = payload["content"]?["body"], !text.isEmpty {
            shown["body"] = .string(clipped(room != nil && sender != nil ? "\(sender ?? ""): \(text)" : text, to: 500))
        }
        shown["navigate"] = .string(navigateURL(template, room: notification.roomId, event: notification.eventId))
        if let roomId = notification.roomId, !roomId.isEmpty { shown["tag"] = .string(roomId) }
        if let unread = notification.counts.unread { shown["app_badge"] = .int(unread) }
        if notification.isLowPriority { shown["silent"] = true }
        var declarative: JSONObject = ["web_push": 8030, "notification": .object(shown), "mutable": true]
        for (key, value) in payload where declarative[key] == nil { declarative[key] = value }
        return declarative
    }

    /// A badge update for a declarative app (`declarative_badge_updates`): WebKit shows every
    /// declarative message, so it is silent, titled with the app's room-less `title`, and opens the
    /// app's start URL, never an empty room path.
    package static func declarativeBadge(_ payload: JSONObject, _ notification: PushNotification, title: String, startURL: String)
        -> JSONObject
    {
        var shown: JSONObject = ["title": .string(clipped(title, to: 100)), "navigate": .string(startURL), "silent": true]
        if let unread = notification.counts.unread { shown["app_badge"] = .int(unread) }
        var declarative: JSONObject = ["web_push": 8030, "notification": .object(shown), "mutable": true]
        for (key, value) in payload where declarative[key] == nil { declarative[key] = value }
        return declarative
    }

    /// `https://host[:port]/` of a URL (a declarative app's default start URL, from its
    /// `declarative_navigate`).
    static func origin(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return nil }
        return "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")/"
    }

    /// `text` cut to `limit` characters, with "…" when cut.
    static func clipped(_ text: String, to limit: Int) -> String {
        guard text.count > limit else { return text }
        return String(text.prefix(limit - 1)) + "…"
    }

    /// `template` with `{room_id}` and `{event_id}` replaced by the ids, percent-encoded.
    static func navigateURL(_ template: String, room: String?, event: String?) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        func encoded(_ value: String?) -> String { value?.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return template.replacingOccurrences(of: "{room_id}", with: encoded(room)).replacingOccurrences(
            of: "{event_id}", with: encoded(event))
    }

    /// Serialises `payload`, shortening its longest strings from their ends (never splitting a
    /// character) until it fits in `limit` bytes. Returns nil if even empty strings do not fit.
    package static func encode(_ payload: JSONObject, limit: Int = WebPushEncryption.maxPlaintext) -> [UInt8]? {
        var current = payload
        var bytes = JSONWriter.serialize(.object(current))
        var rounds = 0
        while bytes.count > limit {
            rounds += 1
            guard rounds < 64, let (path, length) = longestString(in: .object(current), path: []), length > 0 else { return nil }
            let excess = bytes.count - limit
            // Cut the longest string by the excess (or to the next-longest length), at a character boundary.
            current = shorten(.object(current), at: path, by: excess).objectValue ?? current
            bytes = JSONWriter.serialize(.object(current))
        }
        return bytes
    }

    private static func longestString(in value: JSONValue, path: [String]) -> ([String], Int)? {
        switch value {
        case .string(let s): return (path, s.utf8.count)
        case .object(let o):
            var best: ([String], Int)?
            for (key, child) in o {
                if let candidate = longestString(in: child, path: path + [key]), candidate.1 > (best?.1 ?? 0) { best = candidate }
            }
            return best
        default: return nil
        }
    }

    private static func shorten(_ value: JSONValue, at path: [String], by bytes: Int) -> JSONValue {
        guard let key = path.first else {
            guard case .string(let s) = value else { return value }
            var scalars = Array(s.unicodeScalars)
            var removed = 0
            while removed < bytes, let last = scalars.popLast() { removed += JSONWriter.encodedLength(of: last) }
            return .string(String(String.UnicodeScalarView(scalars)))
        }
        guard case .object(var o) = value, let child = o[key] else { return value }
        o[key] = shorten(child, at: Array(path.dropFirst()), by: bytes)
        return .object(o)
    }
}
