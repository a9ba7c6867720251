package import HeraldCore

/// `herald send-test`: one real notification through an app's pushkin, exactly as `/notify`
/// would send it, and what the upstream answered (docs/troubleshooting.md).
package struct SendTestResult: Sendable {
    package var app: String?
    package var outcome: DeviceOutcome

    /// Whether the homeserver would be told to delete this pusher.
    package var wouldReject: Bool { outcome.isRejected }
    package var succeeded: Bool { outcome == .delivered }

    package var report: String {
        var lines = ["app: \(app ?? "(none matches)")", "outcome: \(outcome.label)"]
        if let reason = outcome.reason {
            lines.append("reason: \(reason.label)")
            lines.append("detail: \(reason)")
        }
        lines.append("pushkey rejected (the homeserver would delete the pusher): \(wouldReject ? "yes" : "no")")
        return lines.joined(separator: "\n")
    }
}

extension Gateway {
    /// The notification `send-test` sends: a message event with a body and an unread count.
    package static func testNotification(appId: String, pushkey: String, data: JSONObject) -> PushNotification {
        let fields: JSONObject = [
            "event_id": "$herald-send-test", "room_id": "!herald-send-test:localhost", "type": "m.room.message",
            "sender": "@herald:localhost", "sender_display_name": "Herald", "room_name": "Herald test", "prio": "high",
            "content": ["msgtype": "m.text", "body": "Herald test notification"], "counts": ["unread": 1],
        ]
        var notification = PushNotification(
            eventId: "$herald-send-test", roomId: "!herald-send-test:localhost", type: "m.room.message", sender: "@herald:localhost",
            senderDisplayName: "Herald", roomName: "Herald test", userIsTarget: false, prio: "high",
            content: ["msgtype": "m.text", "body": "Herald test notification"], counts: .init(unread: 1),
            devices: [Device(appId: appId, pushkey: pushkey, data: data)])
        notification.fields = fields
        return notification
    }

    /// Routes `appId` as `/notify` does and sends the test notification to one device, through the
    /// same dispatcher (limits, metrics and log line included).
    package func sendTest(appId: String, pushkey: String, data: JSONObject = JSONObject()) async -> SendTestResult {
        let notification = Self.testNotification(appId: appId, pushkey: pushkey, data: data)
        let dispatcher = live.withLock { $0.dispatcher }
        let app: String?
        switch dispatcher.router.route(appId) {
        case .pushkin(let pushkin): app = pushkin.name
        case .unknown, .ambiguous: app = nil
        }
        let outcome = await dispatcher.dispatch(notification, logger: logger).first ?? .notDispatched
        return SendTestResult(app: app, outcome: outcome)
    }
}
