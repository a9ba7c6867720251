package import HeraldCore
package import HeraldUpstream

/// A message for FCM built outside the notify path (the Status adapter's, as gorush builds it for
/// status-go): FCM v1's `message` (its `notification`, `android`, `apns`, `webpush`,
/// `fcm_options` and string `data`) for one registration token.
package struct FCMRawMessage: Sendable {
    package var message: JSONObject
    package var token: String

    package init(message: JSONObject, token: String) {
        self.message = message
        self.token = token
    }
}

/// A pushkin that sends ready-made FCM messages through its credentials.
package protocol FCMSending: Pushkin {
    func send(_ message: FCMRawMessage, context: DispatchContext) async -> DeviceResult
}
