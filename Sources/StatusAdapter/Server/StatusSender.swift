import HeraldCore
package import HeraldUpstream
package import Pushkins

/// Where Status notifications go: one notification, in gorush's terms, to one device token (its
/// outcome, with what its upstream call left for the delivery trace). The
/// Status server (which builds what status-go's push server would post to gorush) and the gorush
/// API depend on this, not on pushkins, so tests can record what would be sent.
package protocol StatusSender: Sendable {
    func send(_ notification: GorushNotification, platform: StatusPlatform, token: String, context: DispatchContext) async
        -> DeviceResult

    /// The pushkin whose rejected-token metrics count this platform's rejections.
    func pushkinName(_ platform: StatusPlatform) -> String?
}

/// The `StatusSender` of a running Herald: through the pushkins named in `status:`, one per
/// platform row, with what gorush 1.22 sends for the notification (docs/status-protocol.md,
/// "gorush's fields").
package struct PushkinStatusSender: StatusSender {
    /// Each platform's pushkin, of the platform's kind (checked when built).
    let pushkins: [StatusPlatform: any Pushkin]

    package init(pushkins: [StatusPlatform: any Pushkin]) {
        self.pushkins = pushkins
    }

    package func send(_ notification: GorushNotification, platform: StatusPlatform, token: String, context: DispatchContext) async
        -> DeviceResult
    {
        guard let pushkin = pushkins[platform], let result = await platform.send(pushkin, notification, token, context) else {
            return DeviceResult(.failed(reason: .noPushkin(platform.noApp)))
        }
        return result
    }

    /// The pushkin a platform's rejections are counted under.
    package func pushkinName(_ platform: StatusPlatform) -> String? { pushkins[platform]?.name }
}
