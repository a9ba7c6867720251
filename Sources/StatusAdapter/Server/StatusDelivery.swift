import Foundation
import Pushkins

/// Where Status notifications go: one notification to one device token.
public protocol StatusSender: Sendable {
    func send(
        platform: StatusPlatform, token: String, message: String, title: String?, topic: String?, data: JSONObject, context: DispatchContext
    ) async -> DeviceOutcome

    /// The pushkin whose rejected-token metrics count this platform's rejections.
    func pushkinName(_ platform: StatusPlatform) -> String?
}

/// gorush's platforms: 1 iOS (APNs), 2 Android (FCM).
public enum StatusPlatform: Int, Sendable {
    case ios = 1
    case android = 2
}

/// Sends Status notifications through Herald's pushkins, with the payloads gorush would produce
/// for status-go's request (status.md §5.2, §9 item 6).
public struct StatusDelivery: StatusSender {
    public let apns: APNsPushkin?
    public let fcm: FCMPushkin?

    public init(apns: APNsPushkin?, fcm: FCMPushkin?) {
        self.apns = apns
        self.fcm = fcm
    }

    /// One notification to one device token. `data` keys go to the top level of the APNs payload
    /// and into FCM's string `data` map.
    public func send(
        platform: StatusPlatform, token: String, message: String, title: String?, topic: String?, data: JSONObject,
        context: DispatchContext
    ) async -> DeviceOutcome {
        switch platform {
        case .ios:
            guard let apns else { return .failed(reason: "no APNs app is configured for Status") }
            // gorush's shape: `aps` first, then every data key at the top level.
            var payload: JSONObject = [:]
            if let title, !title.isEmpty {
                payload["aps"] = ["alert": ["title": .string(title), "body": .string(message)]]
            } else {
                payload["aps"] = ["alert": .string(message)]
            }
            for (key, value) in data where key != "aps" { payload[key] = value }
            return await apns.sendRaw(
                payload: payload, deviceToken: token, topic: topic.flatMap { $0.isEmpty ? nil : $0 }, context: context)
        case .android:
            guard let fcm else { return .failed(reason: "no FCM app is configured for Status") }
            var notification: JSONObject = ["body": .string(message)]
            if let title, !title.isEmpty { notification["title"] = .string(title) }
            return await fcm.sendRaw(notification: notification, data: FCMData.stringify(data).data, token: token, context: context)
        }
    }

    /// The pushkin a platform's rejections are counted under.
    public func pushkinName(_ platform: StatusPlatform) -> String? {
        switch platform {
        case .ios: return apns?.name
        case .android: return fcm?.name
        }
    }
}
