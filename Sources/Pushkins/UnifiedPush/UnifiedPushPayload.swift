package import HeraldCore

/// The body a UnifiedPush distributor receives: `{"notification": {…}}`, the notification's
/// fields as the homeserver sent them, without `devices`.
package enum UnifiedPushPayload {
    /// The body, within `limit` bytes: when the whole notification does not fit, `content` is left
    /// out (the app fetches the event itself); nil when even that does not fit.
    package static func encode(_ notification: PushNotification, limit: Int) -> [UInt8]? {
        var fields = notification.fields
        fields.removeValue(forKey: "devices")
        let whole = JSONWriter.serialize(["notification": .object(fields)])
        if whole.count <= limit { return whole }
        fields.removeValue(forKey: "content")
        let slim = JSONWriter.serialize(["notification": .object(fields)])
        return slim.count <= limit ? slim : nil
    }
}
