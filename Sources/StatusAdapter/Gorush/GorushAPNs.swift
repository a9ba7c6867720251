import HeraldCore
import Pushkins

/// What gorush 1.22 sends to APNs for a notification (docs/status-protocol.md, "gorush's fields"):
/// its headers and its payload, field for field.
enum GorushAPNs {
    /// The APNs message for one device token.
    static func message(_ n: GorushNotification, token: String) -> APNsMessage {
        var message = APNsMessage(payload: payload(n), deviceToken: token)
        message.topic = n.topic.isEmpty ? nil : n.topic
        message.priority = priority(n.priority)
        message.pushType = n.pushType.isEmpty ? nil : n.pushType
        // gorush sends `apns-expiration` whenever the field is given, 0 included ("deliver once
        // or drop"), as a whole number of seconds.
        message.expiration = n.expiration.map { Int($0) }
        message.collapseId = n.collapseId.isEmpty ? nil : n.collapseId
        message.id = n.apnsId.isEmpty ? nil : n.apnsId
        return message
    }

    /// gorush's `priority`: "high" is 10, "normal" is 5, anything else sends no header.
    static func priority(_ value: String) -> Int? {
        switch value {
        case "high": return 10
        case "normal": return 5
        default: return nil
        }
    }

    /// `{"aps": {…}, <each data key>}`: the `aps` keys in the order Apple lists them.
    static func payload(_ n: GorushNotification) -> JSONObject {
        // Room for what Status's own notifications set (alert, content-available, sound); the
        // rare others grow it.
        var aps = JSONObject(minimumCapacity: 4)
        if let alert = alert(n) { aps["alert"] = alert }
        if let badge = n.badge, badge >= 0 { aps["badge"] = .int(badge) }
        if !n.category.isEmpty { aps["category"] = .string(n.category) }
        if n.contentAvailable { aps["content-available"] = 1 }
        if !n.interruptionLevel.isEmpty { aps["interruption-level"] = .string(n.interruptionLevel) }
        if n.mutableContent { aps["mutable-content"] = 1 }
        if let score = n.relevanceScore { aps["relevance-score"] = .double(score) }
        if let sound = sound(n) { aps["sound"] = sound }
        if !n.threadId.isEmpty { aps["thread-id"] = .string(n.threadId) }
        if !n.urlArgs.isEmpty { aps["url-args"] = .array(n.urlArgs.map(JSONValue.string)) }
        if !n.contentState.isEmpty { aps["content-state"] = .object(n.contentState) }
        if n.dismissalDate > 0 { aps["dismissal-date"] = .int(n.dismissalDate) }
        if n.staleDate > 0 { aps["stale-date"] = .int(n.staleDate) }
        if !n.event.isEmpty { aps["event"] = .string(n.event) }
        if n.timestamp > 0 { aps["timestamp"] = .int(n.timestamp) }
        if !n.attributesType.isEmpty { aps["attributes-type"] = .string(n.attributesType) }
        if !n.attributes.isEmpty { aps["attributes"] = .object(n.attributes) }
        var payload = JSONObject(minimumCapacity: 1 + n.data.count)
        payload["aps"] = .object(aps)
        // gorush copies every data key to the top level; an `aps` key among them would replace
        // Apple's dictionary, which Herald does not let a data key do.
        for (key, value) in n.data where key != "aps" { payload[key] = value }
        return payload
    }

    /// `message` alone is the alert string; a title, or any field of `alert`, makes it a
    /// dictionary (which then holds only what those fields give, as gorush's does).
    static func alert(_ n: GorushNotification) -> JSONValue? {
        var dictionary: JSONObject = [:]
        if !n.title.isEmpty {
            dictionary["title"] = .string(n.title)
            if !n.message.isEmpty { dictionary["body"] = .string(n.message) }
        }
        for (key, value) in n.alert { dictionary[key] = value }
        if !dictionary.isEmpty { return .object(ordered(dictionary)) }
        return n.message.isEmpty ? nil : .string(n.message)
    }

    /// The alert dictionary's keys in Apple's order.
    private static func ordered(_ alert: JSONObject) -> JSONObject {
        let order = [
            "title", "subtitle", "body", "launch-image", "title-loc-key", "title-loc-args", "subtitle-loc-key", "subtitle-loc-args",
            "loc-key", "loc-args", "action-loc-key", "action", "summary-arg", "summary-arg-count",
        ]
        var sorted: JSONObject = [:]
        for key in order { if let value = alert[key] { sorted[key] = value } }
        for (key, value) in alert where sorted[key] == nil { sorted[key] = value }
        return sorted
    }

    /// `sound` as a name or as a critical-alert dictionary (`critical`, `name`, `volume`; other
    /// keys and wrong types left out, as gorush decodes it); `name` and `volume` at the top level
    /// of the notification make it a dictionary.
    static func sound(_ n: GorushNotification) -> JSONValue? {
        var dictionary: JSONObject?
        var name: JSONValue?
        switch n.sound {
        case .string(let text)?: name = .string(text)
        case .object(let fields)?:
            var decoded: JSONObject = [:]
            if case .int(let critical)? = fields["critical"], critical != 0 { decoded["critical"] = .int(critical) }
            if case .string(let text)? = fields["name"], !text.isEmpty { decoded["name"] = .string(text) }
            switch fields["volume"] {
            case .double(let volume)? where volume != 0: decoded["volume"] = .double(volume)
            case .int(let volume)? where volume != 0: decoded["volume"] = .double(Double(volume))
            default: break
            }
            dictionary = decoded
        default: break
        }
        if !n.soundName.isEmpty || n.soundVolume > 0 {
            var merged = dictionary ?? [:]
            if !n.soundName.isEmpty { merged["name"] = .string(n.soundName) }
            if n.soundVolume > 0 { merged["volume"] = .double(n.soundVolume) }
            dictionary = merged
        }
        if let dictionary { return .object(dictionary) }
        return name
    }
}
