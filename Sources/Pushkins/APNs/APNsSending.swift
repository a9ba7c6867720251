/// A message for APNs built outside the notify path (the Status adapter, and the Web Push relay to
/// come): the payload and the headers the caller decides. Nil headers are not sent, except the
/// topic and push type, which then come from the app's config.
public struct APNsMessage: Sendable {
    public var payload: JSONObject
    /// The device token as hex.
    public var deviceToken: String
    public var topic: String?
    public var priority: Int?
    public var pushType: String?
    /// `apns-expiration` as seconds since 1970.
    public var expiration: Int?
    public var collapseId: String?

    public init(
        payload: JSONObject, deviceToken: String, topic: String? = nil, priority: Int? = nil, pushType: String? = nil,
        expiration: Int? = nil, collapseId: String? = nil
    ) {
        self.payload = payload
        self.deviceToken = deviceToken
        self.topic = topic
        self.priority = priority
        self.pushType = pushType
        self.expiration = expiration
        self.collapseId = collapseId
    }
}

/// A pushkin that sends ready-made APNs messages through its connections and credentials.
public protocol APNsSending: Pushkin {
    func send(_ message: APNsMessage, context: DispatchContext) async -> DeviceOutcome
}
