import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import SwiftProtobuf
import Testing

@testable import StatusAdapter

/// The whole exchange of the known-answer vectors, through `StatusServer`: every message, byte for byte.
@Suite struct ProtocolVectorTests {
    @Test func registrationPlaintextAndPayload() throws {
        var r = Protobuf_PushNotificationRegistration()
        r.tokenType = .apnToken
        r.deviceToken = "abc"
        r.installationID = V.installation
        r.accessToken = V.accessToken
        r.enabled = true
        r.version = 1
        r.allowedKeyList = [Data(V.h(V.allowedEntry))]
        r.blockedChatList = [Data(Keccak.shake256(Array(("0x" + V.blockedUncompressed).utf8)))]
        r.grant = Data(V.h(V.grant))
        r.allowFromContactsOnly = true
        r.apnTopic = "im.status.ethereum"
        r.allowedMentionsChatList = [Data(Keccak.shake256(Array("status".utf8)))]
        r.mutedChatList = [Data(Keccak.shake256(Array("muted-chat".utf8)))]
        #expect([UInt8](try r.serializedData()).hex == V.registrationPlain)
        let payload = try StatusCrypto.seal(
            V.h(V.registrationPlain), key: try V.bob.sharedX(with: V.server.publicKey), nonce: Array(0xA0...0xAB))
        #expect(payload.hex == V.registrationPayload)
        #expect(Keccak.shake256(payload).hex == V.requestId)
        #expect(try StatusEnvelope.wrap(payload: payload, type: 16, key: V.bob) == V.registrationAMM)
        #expect(StatusCrypto.messageId(signer: V.bob.publicKey, message: V.registrationAMM).hex == V.registrationMessageId)
    }

    @Test func fullExchange() async throws {
        let sender = RecordingSender()
        let (server, store) = try await makeServer(sender: sender)
        defer { Task { await store.close() } }

        // Registration → the signed response, byte for byte.
        let registered = await server.handle(V.registrationAMM)
        #expect(try registered.get() == V.registrationResponseAMM)

        // Query → the contacts-only answer (allowed_key_list, no token).
        let queried = try await server.handle(V.h(V.queryAMM)).get()
        let query = try StatusTestClient.open(queried)
        #expect(query.type == 19)
        #expect(query.signer == V.server.publicKey)
        #expect(query.payload.hex == V.queryResponsePlain)
        #expect(StatusCrypto.messageId(signer: V.ephemeral.publicKey, message: V.h(V.queryAMM)).hex == V.queryMessageId)

        // Push request → the report, and exactly what gorush would have been asked to send.
        #expect(StatusCrypto.messageId(signer: V.ephemeral.publicKey, message: V.pushAMM).hex == V.pushMessageId)
        #expect(try StatusEnvelope.wrap(payload: V.h(V.pushPlain), type: 20, key: V.ephemeral) == V.pushAMM)
        let pushed = try await server.handle(V.pushAMM).get()
        let push = try StatusTestClient.open(pushed)
        #expect(push.type == 21)
        #expect(push.payload.hex == V.pushResponsePlain)
        let expected = try JSONParser.parse(V.gorushBody)["notifications"]?.arrayValue?.first
        #expect(sender.sent.count == 1)
        let sent = try #require(sender.sent.first)
        #expect(sent.platform == .ios)
        #expect(.string(sent.token) == expected?["tokens"]?.arrayValue?.first)
        #expect(.string(sent.message) == expected?["message"])
        #expect(.string(sent.topic ?? "") == expected?["topic"])
        // status-go's request of today adds, for an APNs token, a deep link and a push that sounds
        // and lets the app wake (docs/status-protocol.md, "What is sent").
        var data = try #require(expected?["data"]?.objectValue)
        data["deepLink"] = "status-app://chats"
        #expect(sent.data == data)
        #expect(sent.notification.contentAvailable && sent.notification.sound == "default")
        #expect(sent.notification.priority == "high" && sent.notification.pushType == "alert")

        // The same request again: the same answer, and nothing sent twice.
        #expect(try await server.handle(V.pushAMM).get() == pushed)
        #expect(sender.sent.count == 1)
    }
}
