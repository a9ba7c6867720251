import Foundation
import HeraldCore
import HeraldUpstream
import Pushkins

/// Where Status notifications go: one notification, in gorush's terms, to one device token. The
/// Status server (which builds what status-go's push server would post to gorush) and the gorush
/// API depend on this, not on pushkins, so tests can record what would be sent.
package protocol StatusSender: Sendable {
    func send(_ notification: GorushNotification, platform: StatusPlatform, token: String, context: DispatchContext) async
        -> DeviceOutcome

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

/// The `StatusSender` of a running Herald: through the APNs, FCM and Huawei pushkins named in
/// `status:`, with what gorush 1.22 sends for the notification (docs/status-protocol.md, "gorush's
/// fields").
package struct PushkinStatusSender: StatusSender {
    package let apns: (any APNsSending)?
    package let fcm: (any FCMSending)?
    package let hms: (any HMSSending)?

    package init(apns: (any APNsSending)?, fcm: (any FCMSending)?, hms: (any HMSSending)? = nil) {
        self.apns = apns
        self.fcm = fcm
        self.hms = hms
    }

    package func send(_ notification: GorushNotification, platform: StatusPlatform, token: String, context: DispatchContext) async
        -> DeviceOutcome
    {
        switch platform {
        case .ios:
            guard let apns else { return .failed(reason: .noPushkin("no APNs app is configured for Status")) }
            return await apns.send(GorushAPNs.message(notification, token: token), context: context)
        case .android:
            guard let fcm else { return .failed(reason: .noPushkin("no FCM app is configured for Status")) }
            return await fcm.send(FCMRawMessage(message: GorushFCM.message(notification), token: token), context: context)
        case .huawei:
            guard let hms else { return .failed(reason: .noPushkin("no Huawei (hms) app is configured for Status")) }
            return await hms.send(GorushHMS.message(notification, token: token), context: context)
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
