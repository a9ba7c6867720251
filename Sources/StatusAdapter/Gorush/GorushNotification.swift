package import HeraldCore

/// One notification of gorush's `POST /api/push`, with every field of gorush 1.22's
/// `PushNotification` that means something for APNs, FCM v1 or Huawei Push Kit
/// (docs/status-protocol.md, "gorush's fields"). Read as gorush's JSON binding reads it: a field of
/// the wrong type refuses the whole request (gorush's 400 "Missing notifications field."), an
/// unknown field is ignored, and an absent or `null` field keeps its zero value.
package struct GorushNotification: Sendable, Equatable {
    // Common
    package var notifId: JSONValue?
    package var to = ""
    package var topic = ""
    package var tokens: [String] = []
    package var platform = 0
    package var message = ""
    package var title = ""
    package var image = ""
    package var priority = ""
    package var contentAvailable = false
    package var mutableContent = false
    /// A string (a sound file name) or a dictionary (`critical`, `name`, `volume`).
    package var sound: JSONValue?
    package var data: JSONObject = [:]
    package var retry = 0

    // FCM
    package var notification: JSONObject?
    package var android: JSONObject?
    package var webpush: JSONObject?
    package var apns: JSONObject?
    package var fcmOptions: JSONObject?
    package var condition = ""

    // Huawei
    package var appId = ""
    package var appSecret = ""
    package var huaweiNotification: JSONObject?
    package var huaweiData = ""
    package var huaweiCollapseKey = 0
    package var huaweiTTL = ""
    package var biTag = ""
    package var fastAppTarget = 0

    // iOS
    package var expiration: Int64?
    package var apnsId = ""
    package var collapseId = ""
    package var pushType = ""
    package var badge: Int64?
    package var category = ""
    package var threadId = ""
    package var urlArgs: [String] = []
    package var alert: JSONObject = [:]
    package var production = false
    package var development = false
    package var soundName = ""
    package var soundVolume = 0.0
    package var interruptionLevel = ""

    // Live Activities
    package var contentState: JSONObject = [:]
    package var staleDate: Int64 = 0
    package var dismissalDate: Int64 = 0
    package var event = ""
    package var timestamp: Int64 = 0
    package var attributesType = ""
    package var attributes: JSONObject = [:]
    package var relevanceScore: Double?

    /// A field whose value is not of the type gorush declares.
    package struct TypeMismatch: Error, Equatable {
        package var field: String
    }

    package init() {}

    /// Reads one notification object as gorush binds it.
    package init(_ object: JSONObject) throws(TypeMismatch) {
        let reader = FieldReader(object: object)
        notifId = object["notif_id"].flatMap { $0 == .null ? nil : $0 }
        to = try reader.string("to")
        topic = try reader.string("topic")
        tokens = try reader.strings("tokens")
        platform = Int(try reader.int("platform") ?? 0)
        message = try reader.string("message")
        title = try reader.string("title")
        image = try reader.string("image")
        priority = try reader.string("priority")
        contentAvailable = try reader.bool("content_available")
        mutableContent = try reader.bool("mutable_content")
        sound = object["sound"].flatMap { $0 == .null ? nil : $0 }
        data = try reader.object("data") ?? [:]
        retry = Int(try reader.int("retry") ?? 0)

        notification = try reader.object("notification")
        android = try reader.object("android")
        webpush = try reader.object("webpush")
        apns = try reader.object("apns")
        fcmOptions = try reader.object("fcm_options")
        condition = try reader.string("condition")

        appId = try reader.string("app_id")
        appSecret = try reader.string("app_secret")
        huaweiNotification = try reader.object("huawei_notification")
        huaweiData = try reader.string("huawei_data")
        huaweiCollapseKey = Int(try reader.int("huawei_collapse_key") ?? 0)
        huaweiTTL = try reader.string("huawei_ttl")
        biTag = try reader.string("bi_tag")
        fastAppTarget = Int(try reader.int("fast_app_target") ?? 0)

        expiration = try reader.int("expiration")
        apnsId = try reader.string("apns_id")
        collapseId = try reader.string("collapse_id")
        pushType = try reader.string("push_type")
        badge = try reader.int("badge")
        category = try reader.string("category")
        threadId = try reader.string("thread-id")
        urlArgs = try reader.strings("url-args")
        alert = try reader.alert("alert")
        production = try reader.bool("production")
        development = try reader.bool("development")
        soundName = try reader.string("name")
        soundVolume = try reader.number("volume") ?? 0
        interruptionLevel = try reader.string("interruption_level")

        contentState = try reader.object("content-state") ?? [:]
        staleDate = try reader.int("stale-date") ?? 0
        dismissalDate = try reader.int("dismissal-date") ?? 0
        event = try reader.string("event")
        timestamp = try reader.int("timestamp") ?? 0
        attributesType = try reader.string("attributes-type")
        attributes = try reader.object("attributes") ?? [:]
        relevanceScore = try reader.number("relevance-score")

        if case .object? = sound {
            // gorush decodes a sound dictionary field by field; a wrong type there is ignored.
        } else if let sound, sound.stringValue == nil {
            throw TypeMismatch(field: "sound")
        }
    }

    /// gorush's `IsTopic`: an Android or Huawei message to a topic or a condition.
    package var isTopic: Bool { (platform == 2 || platform == 3) && (!topic.isEmpty || !condition.isEmpty) }
}

/// Reads fields of one JSON object with Go's `encoding/json` rules for the declared type.
private struct FieldReader {
    let object: JSONObject

    private func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    func string(_ key: String) throws(GorushNotification.TypeMismatch) -> String {
        guard let value = value(key) else { return "" }
        guard let string = value.stringValue else { throw .init(field: key) }
        return string
    }

    func bool(_ key: String) throws(GorushNotification.TypeMismatch) -> Bool {
        guard let value = value(key) else { return false }
        guard case .bool(let flag) = value else { throw .init(field: key) }
        return flag
    }

    /// A whole number (Go rejects a fraction or a string for an integer field).
    func int(_ key: String) throws(GorushNotification.TypeMismatch) -> Int64? {
        guard let value = value(key) else { return nil }
        switch value {
        case .int(let number): return number
        case .double(let number) where number.rounded() == number && abs(number) < 9.2e18: return Int64(number)
        default: throw .init(field: key)
        }
    }

    func number(_ key: String) throws(GorushNotification.TypeMismatch) -> Double? {
        guard let value = value(key) else { return nil }
        switch value {
        case .int(let number): return Double(number)
        case .double(let number): return number
        default: throw .init(field: key)
        }
    }

    func strings(_ key: String) throws(GorushNotification.TypeMismatch) -> [String] {
        guard let value = value(key) else { return [] }
        guard case .array(let items) = value else { throw .init(field: key) }
        var strings: [String] = []
        for item in items {
            guard let string = item.stringValue else { throw .init(field: key) }
            strings.append(string)
        }
        return strings
    }

    func object(_ key: String) throws(GorushNotification.TypeMismatch) -> JSONObject? {
        guard let value = value(key) else { return nil }
        guard case .object(let fields) = value else { throw .init(field: key) }
        return fields
    }

    /// gorush's `Alert`: strings, two string lists and one whole number; other keys ignored.
    func alert(_ key: String) throws(GorushNotification.TypeMismatch) -> JSONObject {
        guard let fields = try object(key) else { return [:] }
        let nested = FieldReader(object: fields)
        var alert: JSONObject = [:]
        for name in ["action", "action-loc-key", "body", "launch-image", "loc-key", "title", "subtitle", "title-loc-key", "summary-arg"] {
            let text = try nested.string(name)
            if !text.isEmpty { alert[name] = .string(text) }
        }
        for name in ["loc-args", "title-loc-args"] {
            let list = try nested.strings(name)
            if !list.isEmpty { alert[name] = .array(list.map(JSONValue.string)) }
        }
        if let count = try nested.int("summary-arg-count"), count > 0 { alert["summary-arg-count"] = .int(count) }
        return alert
    }
}
