package import HeraldCore
package import HeraldUpstream
package import NIOCore

/// A message for APNs built outside the notify path (the Status adapter, and the Web Push relay to
/// come): the payload and the headers the caller decides. Nil headers are not sent, except the
/// topic and push type, which then come from the app's config.
package struct APNsMessage: Sendable {
    package enum Body: Sendable {
        /// A payload shortened to fit APNs' 4096 bytes as Sygnal does.
        case payload(JSONObject)
        /// Bytes sent as they are (the relay's, or a payload written straight into its buffer,
        /// `APNsPayloadWriter`); over 4096 bytes the message is dropped as too large.
        case raw(ByteBuffer)
    }

    package var body: Body
    /// The payload, when the body is one.
    package var payload: JSONObject? {
        if case .payload(let payload) = body { return payload }
        return nil
    }
    /// The device token as hex.
    package var deviceToken: String
    package var topic: String?
    package var priority: Int?
    package var pushType: String?
    /// `apns-expiration` as seconds since 1970.
    package var expiration: Int?
    package var collapseId: String?
    /// `apns-id`; a new UUID when nil.
    package var id: String?

    package init(
        payload: JSONObject, deviceToken: String, topic: String? = nil, priority: Int? = nil, pushType: String? = nil,
        expiration: Int? = nil, collapseId: String? = nil, id: String? = nil
    ) {
        self.init(
            body: .payload(payload), deviceToken: deviceToken, topic: topic, priority: priority, pushType: pushType,
            expiration: expiration, collapseId: collapseId, id: id)
    }

    package init(
        body: Body, deviceToken: String, topic: String? = nil, priority: Int? = nil, pushType: String? = nil, expiration: Int? = nil,
        collapseId: String? = nil, id: String? = nil
    ) {
        self.body = body
        self.id = id
        self.deviceToken = deviceToken
        self.topic = topic
        self.priority = priority
        self.pushType = pushType
        self.expiration = expiration
        self.collapseId = collapseId
    }
}

/// A pushkin that sends ready-made APNs messages through its connections and credentials.
package protocol APNsSending: Pushkin {
    func send(_ message: APNsMessage, context: DispatchContext) async -> DeviceResult

    /// The APNs host it sends to.
    var baseURL: String { get }

    /// The same credentials and settings against another APNs host (Apple's development host for a
    /// production app: a token key, or a production certificate, serves both). The caller shuts it
    /// down.
    func sibling(baseURL: String, name: String) throws -> any APNsSending
}

/// APNs hosts and limits.
package enum APNsHosts {
    package static let production = "https://api.push.apple.com"
    package static let development = "https://api.sandbox.push.apple.com"
    /// `apns-collapse-id` is at most 64 bytes.
    package static let maxCollapseIdBytes = 64
    /// The largest payload APNs takes for a notification.
    package static let maxPayloadBytes = 4096

    /// How logs and metrics name a sender to `baseURL`: `development`, `production`, or the URL.
    package static func label(_ baseURL: String) -> String {
        switch baseURL {
        case development: return "development"
        case production: return "production"
        default: return baseURL
        }
    }
}
