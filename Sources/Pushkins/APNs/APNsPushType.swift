package import HeraldCore

/// Apple's rules per `apns-push-type` (docs/compatibility/apns.md, "Push types"): the priorities
/// APNs accepts with it and the suffix its topic needs. Herald derives what the config leaves out
/// and `check-config` refuses what contradicts them, so that a misconfigured app fails at start-up
/// rather than at Apple, device by device.
package struct APNsPushType: Sendable, Equatable {
    package let name: String
    /// The `apns-priority` values Apple accepts with this type.
    package let priorities: Set<Int>
    /// Appended to the app's bundle id to make the `apns-topic`.
    package let topicSuffix: String?

    package static let all: [String: APNsPushType] = Dictionary(
        uniqueKeysWithValues: [
            APNsPushType(name: "alert", priorities: [10, 5], topicSuffix: nil),
            APNsPushType(name: "background", priorities: [5], topicSuffix: nil),
            APNsPushType(name: "voip", priorities: [10, 5], topicSuffix: ".voip"),
            APNsPushType(name: "complication", priorities: [10, 5], topicSuffix: ".complication"),
            APNsPushType(name: "fileprovider", priorities: [5], topicSuffix: ".pushkit.fileprovider"),
            APNsPushType(name: "liveactivity", priorities: [10, 5], topicSuffix: ".push-type.liveactivity"),
            APNsPushType(name: "location", priorities: [10, 5], topicSuffix: ".location-query"),
            APNsPushType(name: "pushtotalk", priorities: [10], topicSuffix: ".voip-ptt"),
            APNsPushType(name: "mdm", priorities: [10, 5], topicSuffix: nil),
            APNsPushType(name: "widgets", priorities: [10, 5], topicSuffix: ".push-type.widgets"),
        ].map { ($0.name, $0) })

    package static func named(_ name: String) -> APNsPushType? { all[name] }

    /// The priority to send: `wanted` when Apple accepts it with this type, else the one it
    /// accepts (a background push is 5 whatever the notification's priority); nil leaves the
    /// header out (Apple's default, 10) where that is allowed.
    package func priority(_ wanted: Int?) -> Int? {
        if let wanted, priorities.contains(wanted) { return wanted }
        if priorities.count == 1 { return priorities.first }
        return wanted.map { _ in 10 }
    }

    /// The topic to send for the app's `topic` (its bundle id): with this type's suffix, unless it
    /// has it already.
    package func topic(_ bundle: String) -> String {
        guard let topicSuffix, !bundle.hasSuffix(topicSuffix) else { return bundle }
        return bundle + topicSuffix
    }

    /// Another type's suffix that `topic` ends with, when this type needs a different one: a
    /// topic for another kind of push.
    package func contradictingSuffix(of topic: String) -> String? {
        guard let topicSuffix else { return nil }
        guard !topic.hasSuffix(topicSuffix) else { return nil }
        return Self.all.values.compactMap(\.topicSuffix).filter { $0 != topicSuffix && !topicSuffix.hasSuffix($0) }
            .first { topic.hasSuffix($0) }
    }
}

extension APNsPushType {
    package static let background = "background"

    /// The push type a payload is, for an app and a message that name none: `background` when its
    /// `aps` asks only to wake the app (`content-available`, no `alert`, `badge` or `sound`), else
    /// `alert`. Bytes sent as they are (the relay's) are `alert`.
    package static func derived(from body: APNsMessage.Body) -> String {
        guard case .payload(let payload) = body, let aps = payload["aps"]?.objectValue else { return "alert" }
        let shows = aps["alert"] != nil || aps["badge"] != nil || aps["sound"] != nil
        return !shows && aps["content-available"].map { $0 != .int(0) && $0 != .null } == true ? background : "alert"
    }

    /// A background notification's payload: `aps` is `{"content-available": 1}` and nothing that
    /// shows, whatever the notification held; every other top-level key (the Matrix ids and
    /// counts, `default_payload`'s own keys) stays for the app to fetch with.
    package static func backgroundPayload(_ payload: JSONObject) -> JSONObject {
        var payload = payload
        payload["aps"] = ["content-available": 1]
        return payload
    }
}
