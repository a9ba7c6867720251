package import HeraldCore
import HeraldUpstream
import Pushkins

/// One of gorush's platforms, as one row: its number and name, the `status:` key naming the app
/// its pushes go through, the type that app must be, and how a gorush notification is sent through
/// it. The rows build the sender, the config's checks, the apps in use and gorush's stats; a new
/// platform is one row in `all` (CONTRIBUTING.md, "Adding a pushkin (a new push provider)").
package struct StatusPlatform: Sendable, Hashable, CustomStringConvertible {
    /// gorush's number for it (`platform` in a notification).
    package let number: Int
    /// gorush's name for it in logs, failed-push entries and `GET /api/stat/app`.
    package let name: String
    /// The `status:` key naming its app.
    package let configKey: String
    /// The type the named app must be.
    package let pushkinType: PushkinType
    /// The provider, as said when no app is configured for it.
    let provider: String
    /// Sends through `pushkin`: nil when it is not of this platform's kind.
    let send: @Sendable (any Pushkin, GorushNotification, String, DispatchContext) async -> DeviceResult?

    package var description: String { name }
    package static func == (a: Self, b: Self) -> Bool { a.number == b.number }
    package func hash(into hasher: inout Hasher) { hasher.combine(number) }

    /// The platform gorush numbers `number`, if it is one of the rows.
    package init?(number: Int) {
        guard let row = Self.all.first(where: { $0.number == number }) else { return nil }
        self = row
    }

    private init(
        number: Int, name: String, configKey: String, pushkinType: PushkinType, provider: String,
        send: @escaping @Sendable (any Pushkin, GorushNotification, String, DispatchContext) async -> DeviceResult?
    ) {
        self.number = number
        self.name = name
        self.configKey = configKey
        self.pushkinType = pushkinType
        self.provider = provider
        self.send = send
    }

    /// What is said when no app of this platform is configured.
    var noApp: String { "no \(provider) app is configured for Status" }
}

extension StatusPlatform {
    /// Platform 1, APN_TOKEN registrations: through `status.apns_app`.
    package static let ios = StatusPlatform(number: 1, name: "ios", configKey: "apns_app", pushkinType: .apns, provider: "APNs") {
        pushkin, notification, token, context in
        guard let apns = pushkin as? any APNsSending else { return nil }
        return await apns.send(GorushAPNs.message(notification, token: token), context: context)
    }

    /// Platform 2, FIREBASE_TOKEN registrations: through `status.fcm_app`.
    package static let android = StatusPlatform(number: 2, name: "android", configKey: "fcm_app", pushkinType: .gcm, provider: "FCM") {
        pushkin, notification, token, context in
        guard let fcm = pushkin as? any FCMSending else { return nil }
        return await fcm.send(FCMRawMessage(message: GorushFCM.message(notification), token: token), context: context)
    }

    /// Platform 3: through `status.hms_app`.
    package static let huawei = StatusPlatform(
        number: 3, name: "huawei", configKey: "hms_app", pushkinType: .hms, provider: "Huawei (hms)"
    ) { pushkin, notification, token, context in
        guard let hms = pushkin as? any HMSSending else { return nil }
        return await hms.send(GorushHMS.message(notification, token: token), context: context)
    }

    /// Every platform, in gorush's order.
    package static let all: [StatusPlatform] = [.ios, .android, .huawei]
}
