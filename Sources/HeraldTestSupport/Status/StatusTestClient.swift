import Foundation
package import StatusAdapter
import SwiftProtobuf

/// A Status client for tests, built from docs/status-protocol.md: it registers with a server (ECDH +
/// AES-GCM payload, grant, identity signature), queries with an ephemeral key and sends push
/// requests, producing exactly the bytes status-go would.
package struct StatusTestClient: Sendable {
    package let identity: Secp256k1.PrivateKey

    package init(identity: Secp256k1.PrivateKey = Secp256k1.PrivateKey()) {
        self.identity = identity
    }

    package var hashedKey: [UInt8] { Keccak.shake256(identity.publicKey.compressed) }
    /// The client's id as Status writes it: "0x04…".
    package var id: String { "0x" + identity.publicKey.uncompressed.hex }

    /// A registration with a valid grant for `server`.
    package func registration(
        server: Secp256k1.PublicKey, version: UInt64 = 1, token: String = "abc",
        tokenType: Protobuf_PushNotificationRegistration.TokenType = .apnToken,
        installationId: String = "c6ae4fde-bb65-11ea-b3de-0242ac130004", accessToken: String = UUID().uuidString.lowercased(),
        topic: String = "im.status.ethereum"
    ) throws -> Protobuf_PushNotificationRegistration {
        var r = Protobuf_PushNotificationRegistration()
        r.tokenType = tokenType
        r.deviceToken = token
        r.installationID = installationId
        r.accessToken = accessToken
        r.enabled = true
        r.version = version
        r.apnTopic = topic
        r.grant = Data(
            try identity.signature(
                forDigest: StatusCrypto.grantDigest(client: identity.publicKey, server: server, accessToken: accessToken)))
        return r
    }

    /// The type-16 message: the registration encrypted to `server`, signed by the identity.
    package func registrationMessage(
        _ registration: Protobuf_PushNotificationRegistration, server: Secp256k1.PublicKey, nonce: [UInt8]? = nil
    )
        throws -> [UInt8]
    {
        let key = try identity.sharedX(with: server)
        let payload = try StatusCrypto.seal([UInt8](registration.serializedData()), key: key, nonce: nonce)
        return try StatusEnvelope.wrap(payload: payload, type: 16, key: identity)
    }

    package static func queryMessage(publicKeys: [[UInt8]], ephemeral: Secp256k1.PrivateKey = Secp256k1.PrivateKey()) throws -> [UInt8] {
        var query = Protobuf_PushNotificationQuery()
        query.publicKeys = publicKeys.map { Data($0) }
        return try StatusEnvelope.wrap(payload: [UInt8](query.serializedData()), type: 18, key: ephemeral)
    }

    package static func pushMessage(_ request: Protobuf_PushNotificationRequest, ephemeral: Secp256k1.PrivateKey = Secp256k1.PrivateKey())
        throws
        -> [UInt8]
    {
        try StatusEnvelope.wrap(payload: [UInt8](request.serializedData()), type: 20, key: ephemeral)
    }

    /// One notification for `recipient` from this client (a 1:1 message unless `type` says otherwise).
    package func notification(
        to recipient: StatusTestClient, accessToken: String, installationId: String = "c6ae4fde-bb65-11ea-b3de-0242ac130004",
        type: Protobuf_PushNotification.PushNotificationType = .message, chatId: [UInt8]? = nil
    ) -> Protobuf_PushNotification {
        var n = Protobuf_PushNotification()
        n.accessToken = accessToken
        n.chatID = Data(chatId ?? Keccak.shake256(Array(id.utf8)))
        n.publicKey = Data(recipient.hashedKey)
        n.installationID = installationId
        n.type = type
        n.author = Data(Keccak.shake256(Array(id.utf8)))
        return n
    }

    /// Opens a server's response: its type, its payload and the key that signed it.
    package static func open(_ bytes: [UInt8]) throws -> (type: Int, payload: [UInt8], signer: Secp256k1.PublicKey) {
        let opened = try StatusEnvelope.open(bytes)
        return (opened.type, opened.payload, opened.signer)
    }
}
