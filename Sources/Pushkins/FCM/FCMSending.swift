import HeraldCore
import HeraldUpstream

/// A message for FCM built outside the notify path (the Status adapter's, as gorush builds it for
/// status-go): a visible `notification` and a string `data` map for one registration token.
package struct FCMRawMessage: Sendable {
    package var notification: JSONObject
    package var data: JSONObject
    package var token: String

    package init(notification: JSONObject, data: JSONObject, token: String) {
        self.notification = notification
        self.data = data
        self.token = token
    }
}

/// A pushkin that sends ready-made FCM messages through its credentials.
package protocol FCMSending: Pushkin {
    func send(_ message: FCMRawMessage, context: DispatchContext) async -> DeviceOutcome
}
