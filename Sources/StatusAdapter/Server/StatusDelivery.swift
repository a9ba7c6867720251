import Foundation
import Pushkins

/// Sends Status notifications through Herald's pushkins, with the payloads gorush would produce
/// for status-go's request (status.md §5.2, §9 item 6).
public struct StatusDelivery: Sendable {
    public let apns: APNsPushkin?
    public let fcm: FCMPushkin?

    public init(apns: APNsPushkin?, fcm: FCMPushkin?) {
        self.apns = apns
        self.fcm = fcm
    }

    public enum Platform: Int, Sendable {
        case ios = 1
        case android = 2
    }

    /// One notification to one device token. `data` keys go to the top level of the APNs payload
    /// and into FCM's string `data` map.
    public func send(
        platform: Platform, token: String, message: String, title: String? = nil, topic: String?, data: JSONObject,
        context: DispatchContext
    ) async -> DeviceOutcome {
        switch platform {
        case .ios:
            guard let apns else { return .failed(reason: "no APNs app is configured for Status") }
            var payload = data
            if let title, !title.isEmpty {
                payload["aps"] = ["alert": ["title": .string(title), "body": .string(message)]]
            } else {
                payload["aps"] = ["alert": .string(message)]
            }
            return await apns.sendRaw(payload: payload, deviceToken: token, topic: topic.flatMap { $0.isEmpty ? nil : $0 }, context: context)
        case .android:
            guard let fcm else { return .failed(reason: "no FCM app is configured for Status") }
            var notification: JSONObject = ["body": .string(message)]
            if let title, !title.isEmpty { notification["title"] = .string(title) }
            return await fcm.sendRaw(notification: notification, data: FCMData.stringify(data).data, token: token, context: context)
        }
    }

    /// The pushkin a platform's rejections are counted under.
    public func pushkinName(_ platform: Platform) -> String? {
        switch platform {
        case .ios: return apns?.name
        case .android: return fcm?.name
        }
    }
}
