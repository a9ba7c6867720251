/// A message for FCM built outside the notify path (the Status adapter's, as gorush builds it for
/// status-go): a visible `notification` and a string `data` map for one registration token.
public struct FCMRawMessage: Sendable {
    public var notification: JSONObject
    public var data: JSONObject
    public var token: String

    public init(notification: JSONObject, data: JSONObject, token: String) {
        self.notification = notification
        self.data = data
        self.token = token
    }
}

/// A pushkin that sends ready-made FCM messages through its credentials.
public protocol FCMSending: Pushkin {
    func send(_ message: FCMRawMessage, context: DispatchContext) async -> DeviceOutcome
}
