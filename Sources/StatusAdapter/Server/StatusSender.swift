import Foundation
import HeraldCore
import HeraldUpstream
import Pushkins

/// Where Status notifications go: one notification to one device token. The server and the
/// gorush API depend on this, not on pushkins, so tests can record what would be sent.
package protocol StatusSender: Sendable {
    func send(
        platform: StatusPlatform, token: String, message: String, title: String?, topic: String?, data: JSONObject, context: DispatchContext
    ) async -> DeviceOutcome

    /// The pushkin whose rejected-token metrics count this platform's rejections.
    func pushkinName(_ platform: StatusPlatform) -> String?
}

/// gorush's platforms: 1 iOS (APNs), 2 Android (FCM), 3 Huawei (Push Kit).
package enum StatusPlatform: Int, Sendable {
    case ios = 1
    case android = 2
    case huawei = 3

    /// gorush's name for it in logs and stats.
    package var name: String {
        switch self {
        case .ios: return "ios"
        case .android: return "android"
        case .huawei: return "huawei"
        }
    }
}

/// The `StatusSender` of a running Herald: through the APNs and FCM pushkins named in `status:`,
/// with the payloads gorush would produce for status-go's request (docs/status-protocol.md).
package struct PushkinStatusSender: StatusSender {
    package let apns: (any APNsSending)?
    package let fcm: (any FCMSending)?
    package let hms: (any HMSSending)?

    package init(apns: (any APNsSending)?, fcm: (any FCMSending)?, hms: (any HMSSending)? = nil) {
        self.apns = apns
        self.fcm = fcm
        self.hms = hms
    }

    /// One notification to one device token. `data` keys go to the top level of the APNs payload
    /// and into FCM's string `data` map.
    package func send(
        platform: StatusPlatform, token: String, message: String, title: String?, topic: String?, data: JSONObject,
        context: DispatchContext
    ) async -> DeviceOutcome {
        switch platform {
        case .ios:
            guard let apns else { return .failed(reason: .noPushkin("no APNs app is configured for Status")) }
            // gorush's shape: `aps` first, then every data key at the top level.
            var payload: JSONObject = [:]
            if let title, !title.isEmpty {
                payload["aps"] = ["alert": ["title": .string(title), "body": .string(message)]]
            } else {
                payload["aps"] = ["alert": .string(message)]
            }
            for (key, value) in data where key != "aps" { payload[key] = value }
            let apnsMessage = APNsMessage(payload: payload, deviceToken: token, topic: topic.flatMap { $0.isEmpty ? nil : $0 })
            return await apns.send(apnsMessage, context: context)
        case .android:
            guard let fcm else { return .failed(reason: .noPushkin("no FCM app is configured for Status")) }
            var notification: JSONObject = ["body": .string(message)]
            if let title, !title.isEmpty { notification["title"] = .string(title) }
            return await fcm.send(
                FCMRawMessage(notification: notification, data: FCMData.stringify(data).data, token: token), context: context)
        case .huawei:
            guard let hms else { return .failed(reason: .noPushkin("no Huawei (hms) app is configured for Status")) }
            return await hms.send(HMSRawMessage(title: title, body: message, data: data, token: token), context: context)
        }
    }

    /// The pushkin a platform's rejections are counted under.
    package func pushkinName(_ platform: StatusPlatform) -> String? {
        switch platform {
        case .ios: return apns?.name
        case .android: return fcm?.name
        case .huawei: return hms?.name
        }
    }
}
