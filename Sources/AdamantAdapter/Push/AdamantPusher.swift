package import HeraldCore
package import HeraldUpstream
package import Logging
package import Pushkins

/// The APNs push for one transaction to one device, as the ADAMANT apps expect it
/// (docs/adamant.md, "Pushes"): localisation keys, `badge` 1, `mutable-content` 1, the sound,
/// `txn-id` and `push-recipient`; the app fetches and decrypts the message itself.
package struct AdamantPusher: Sendable {
    package enum Kind: String, Sendable {
        case chat
        case transfer
    }

    let production: any APNsSending
    let sandbox: any APNsSending
    let topic: String?
    let payloads: [Kind: AdamantConfig.Payload]

    package init(
        production: any APNsSending, sandbox: any APNsSending, topic: String?, chat: AdamantConfig.Payload,
        transfer: AdamantConfig.Payload
    ) {
        self.production = production
        self.sandbox = sandbox
        self.topic = topic
        self.payloads = [.chat: chat, .transfer: transfer]
    }

    package static func payload(_ transaction: AdamantTransaction, recipient: String, config: AdamantConfig.Payload) -> JSONObject {
        var alert: JSONObject = ["loc-key": .string(config.locKey)]
        if let title = config.titleLocKey { alert["title-loc-key"] = .string(title) }
        var aps: JSONObject = ["alert": .object(alert), "badge": 1]
        if let sound = config.sound { aps["sound"] = .string(sound) }
        aps["mutable-content"] = 1
        return ["aps": .object(aps), "txn-id": .string(transaction.id), "push-recipient": .string(recipient)]
    }

    func sender(_ provider: AdamantProvider) -> any APNsSending { provider == .apns ? production : sandbox }

    package func push(_ transaction: AdamantTransaction, kind: Kind, to device: RegisteredDevice, logger: Logger) async -> DeviceResult {
        guard let config = payloads[kind] else { return DeviceResult(.skipped(reason: .nothingToSend)) }
        let message = APNsMessage(
            payload: Self.payload(transaction, recipient: device.address, config: config), deviceToken: device.token, topic: topic,
            priority: 10, pushType: "alert", expiration: 0)
        return await sender(device.provider).send(message, context: DispatchContext(logger: logger))
    }
}
