import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import SwiftProtobuf
import Testing

@testable import StatusAdapter

/// Registration, query and push-request rules (docs/status-protocol.md, §7.2's negative cases, §9).
@Suite struct ServerTests {
    typealias RegistrationError = Protobuf_PushNotificationRegistrationResponse.ErrorType

    let bob = StatusTestClient(identity: V.bob)
    let alice = StatusTestClient(identity: V.alice)

    func register(_ server: StatusServer, _ message: [UInt8]) async throws -> Protobuf_PushNotificationRegistrationResponse {
        let opened = try StatusTestClient.open(try await server.handle(message).get())
        #expect(opened.type == 17)
        return try Protobuf_PushNotificationRegistrationResponse(serializedBytes: opened.payload)
    }

    func push(_ server: StatusServer, _ items: [Protobuf_PushNotification]) async throws -> [Protobuf_PushNotificationReport] {
        var request = Protobuf_PushNotificationRequest()
        request.requests = items
        request.messageID = Data(Keccak.keccak256(Array(UUID().uuidString.utf8)))
        let opened = try StatusTestClient.open(try await server.handle(try StatusTestClient.pushMessage(request)).get())
        #expect(opened.type == 21)
        return try Protobuf_PushNotificationResponse(serializedBytes: opened.payload).reports
    }

    @Test func versionRules() async throws {
        let (server, store) = try await makeServer()
        let token = UUID().uuidString.lowercased()
        let first = try bob.registration(server: V.server.publicKey, version: 1, accessToken: token)
        #expect(try await register(server, try bob.registrationMessage(first, server: V.server.publicKey)).success)
        // The same registration again (a lost response): success, as decided in docs/status-protocol.md, "Herald's decisions".
        #expect(try await register(server, try bob.registrationMessage(first, server: V.server.publicKey)).success)
        // Same version, other content: VERSION_MISMATCH.
        var changed = first
        changed.deviceToken = "other"
        #expect(try await register(server, try bob.registrationMessage(changed, server: V.server.publicKey)).error == .versionMismatch)
        // Version 0: VERSION_MISMATCH.
        var zero = first
        zero.version = 0
        #expect(try await register(server, try bob.registrationMessage(zero, server: V.server.publicKey)).error == .versionMismatch)
        // Unregister at 2 keeps the version; 2 again is idempotent, 1 is too old.
        var off = Protobuf_PushNotificationRegistration()
        off.version = 2
        off.installationID = V.installation
        off.unregister = true
        #expect(try await register(server, try bob.registrationMessage(off, server: V.server.publicKey)).success)
        #expect(try await register(server, try bob.registrationMessage(off, server: V.server.publicKey)).success)
        #expect(try await register(server, try bob.registrationMessage(first, server: V.server.publicKey)).error == .versionMismatch)
        #expect(try await store.registration(publicKey: bob.hashedKey, installationId: V.installation)?.version == 2)
        await store.close()
    }

    @Test func malformedRegistrations() async throws {
        let (server, store) = try await makeServer()
        let server2 = Secp256k1.PrivateKey().publicKey
        func error(_ r: Protobuf_PushNotificationRegistration, signer: StatusTestClient? = nil) async throws -> RegistrationError {
            let response = try await register(server, try (signer ?? bob).registrationMessage(r, server: V.server.publicKey))
            #expect(!response.success)
            return response.error
        }
        let good = try bob.registration(server: V.server.publicKey)
        var r = try bob.registration(server: server2)  // a grant made for another server
        #expect(try await error(r) == .malformedMessage)
        r = good
        r.tokenType = .unknownTokenType
        #expect(try await error(r) == .malformedMessage)
        r = good
        r.installationID = "abc"
        #expect(try await error(r) == .malformedMessage)
        r = good
        r.accessToken = "bc"
        #expect(try await error(r) == .malformedMessage)
        r = good
        r.deviceToken = ""
        #expect(try await error(r) == .malformedMessage)
        r = good
        r.grant = Data(Keccak.keccak256(Array("invalid".utf8)))
        #expect(try await error(r) == .malformedMessage)
        r = good
        r.grant = Data()
        #expect(try await error(r) == .malformedMessage)

        // Encrypted for alice↔server but signed by bob: does not decrypt.
        let payload = try StatusCrypto.seal([UInt8](good.serializedData()), key: try V.alice.sharedX(with: V.server.publicKey))
        let wrongKey = try StatusEnvelope.wrap(payload: payload, type: 16, key: V.bob)
        #expect(try await register(server, wrongKey).error == .malformedMessage)
        // Too short to hold a nonce; not a protobuf inside.
        #expect(
            try await register(server, try StatusEnvelope.wrap(payload: Array("too short".utf8), type: 16, key: V.bob)).error
                == .malformedMessage)
        let garbage = try StatusCrypto.seal([0xFF, 0xFF, 0xFF], key: try V.bob.sharedX(with: V.server.publicKey))
        #expect(try await register(server, try StatusEnvelope.wrap(payload: garbage, type: 16, key: V.bob)).error == .malformedMessage)
        // request_id is SHAKE-256 of the encrypted payload even when it fails.
        #expect(try await register(server, wrongKey).requestID == Data(Keccak.shake256(payload)))
        await store.close()
    }

    @Test func httpLevelErrors() async throws {
        let (server, store) = try await makeServer()
        #expect(await server.handle([1, 2, 3]) == .failure(.notProtobuf))
        var amm = Protobuf_ApplicationMetadataMessage()
        amm.payload = Data([1])
        amm.type = .pushNotificationQuery
        #expect(await server.handle([UInt8](try amm.serializedData())) == .failure(.badSignature("a 65-byte signature is required")))
        amm.signature = Data(repeating: 0, count: 65)
        #expect(await server.handle([UInt8](try amm.serializedData())) == .failure(.badSignature("the signature does not recover a key")))
        #expect(await server.handle(try StatusEnvelope.wrap(payload: [], type: 15, key: V.bob)) == .failure(.unsupportedType(15)))
        #expect(await server.handle(try StatusEnvelope.wrap(payload: [], type: 99, key: V.bob)) == .failure(.unsupportedType(99)))
        #expect(
            await server.handle(try StatusEnvelope.wrap(payload: [0xFF], type: 18, key: V.bob))
                == .failure(.malformedPayload("not a PushNotificationQuery")))
        var request = Protobuf_PushNotificationRequest()
        request.requests = [Protobuf_PushNotification()]
        #expect(await server.handle(try StatusTestClient.pushMessage(request)) == .failure(.missingMessageId))
        await store.close()
    }

    @Test func pushReportsAndFilters() async throws {
        let sender = RecordingSender()
        let (server, store) = try await makeServer(sender: sender)
        let token = UUID().uuidString.lowercased()
        var r = try bob.registration(server: V.server.publicKey, accessToken: token)
        r.blockedChatList = [Data(Keccak.shake256(Array("0x\(V.blockedUncompressed)".utf8)))]
        r.allowedMentionsChatList = [Data(Keccak.shake256(Array("status".utf8)))]
        r.mutedChatList = [Data(Keccak.shake256(Array("muted-chat".utf8)))]
        #expect(try await register(server, try bob.registrationMessage(r, server: V.server.publicKey)).success)
        let blocked = StatusTestClient(identity: V.blocked)

        let reports = try await push(
            server,
            [
                alice.notification(to: bob, accessToken: token),  // sent
                alice.notification(to: bob, accessToken: "x"),  // WRONG_TOKEN
                alice.notification(to: bob, accessToken: token, installationId: "d6ae4fde-bb65-11ea-b3de-0242ac130004"),  // NOT_REGISTERED
                blocked.notification(to: bob, accessToken: token),  // blocked author: success, not sent
                alice.notification(to: bob, accessToken: token, type: .mention, chatId: Keccak.shake256(Array("status".utf8))),  // sent
                alice.notification(to: bob, accessToken: token, type: .mention, chatId: Keccak.shake256(Array("other".utf8))),  // not sent
                alice.notification(to: bob, accessToken: token, chatId: Keccak.shake256(Array("muted-chat".utf8))),  // muted: not sent
                alice.notification(to: bob, accessToken: token, type: .unknownPushNotificationType),  // no report at all
            ])
        #expect(reports.map(\.success) == [true, false, false, true, true, true, true])
        #expect(
            reports.map(\.error) == [
                .unknownErrorType, .wrongToken, .notRegistered, .unknownErrorType, .unknownErrorType, .unknownErrorType, .unknownErrorType,
            ])
        #expect(
            sender.sent.map(\.message) == ["You have a new message", "Someone mentioned you"]
                || sender.sent.map(\.message) == ["Someone mentioned you", "You have a new message"])
        #expect(reports.allSatisfy { $0.publicKey == Data(bob.hashedKey) })
        await store.close()
    }

    @Test func rejectedTokensBecomeNotRegisteredAndLeaveTheQueryResults() async throws {
        let sender = RecordingSender()
        let (server, store) = try await makeServer(sender: sender)
        let token = UUID().uuidString.lowercased()
        let r = try bob.registration(server: V.server.publicKey, token: "deadbeef", accessToken: token)
        #expect(try await register(server, try bob.registrationMessage(r, server: V.server.publicKey)).success)
        sender.script("deadbeef", .rejected(reason: .apns(status: 410, .unregistered)))
        let reports = try await push(server, [alice.notification(to: bob, accessToken: token)])
        #expect(reports.first?.error == .notRegistered)
        #expect(reports.first?.success == false)
        let answer = try StatusTestClient.open(
            try await server.handle(try StatusTestClient.queryMessage(publicKeys: [bob.hashedKey])).get())
        #expect(try Protobuf_PushNotificationQueryResponse(serializedBytes: answer.payload).info.isEmpty)
        // The version is kept: an older registration cannot come back.
        #expect(try await store.registration(publicKey: bob.hashedKey, installationId: V.installation)?.version == 1)
        await store.close()
    }

    @Test func temporaryFailuresAreInternalErrorOr502WhenNothingCouldBeSent() async throws {
        let sender = RecordingSender()
        let (server, store) = try await makeServer(sender: sender)
        let token = UUID().uuidString.lowercased()
        let r = try bob.registration(server: V.server.publicKey, token: "cafe", accessToken: token)
        #expect(try await register(server, try bob.registrationMessage(r, server: V.server.publicKey)).success)
        sender.script("cafe", .failed(reason: .apns(status: 503, .serviceUnavailable)))
        var request = Protobuf_PushNotificationRequest()
        request.requests = [alice.notification(to: bob, accessToken: token)]
        request.messageID = Data([1, 2, 3])
        let message = try StatusTestClient.pushMessage(request)
        #expect(await server.handle(message) == .failure(.dispatchUnavailable("every push upstream failed")))
        // Not cached: the retry is processed again, and now succeeds.
        sender.script("cafe", .delivered)
        let opened = try StatusTestClient.open(try await server.handle(message).get())
        #expect(try Protobuf_PushNotificationResponse(serializedBytes: opened.payload).reports.first?.success == true)
        #expect(sender.sent.count == 2)

        // One failure among successes: INTERNAL_ERROR for it, success for the others.
        let carol = StatusTestClient()
        let carolToken = UUID().uuidString.lowercased()
        let rc = try carol.registration(server: V.server.publicKey, token: "beef", accessToken: carolToken)
        #expect(try await register(server, try carol.registrationMessage(rc, server: V.server.publicKey)).success)
        sender.script("beef", .failed(reason: .fcm(status: 503, .unavailable)))
        let reports = try await push(
            server, [alice.notification(to: bob, accessToken: token), alice.notification(to: carol, accessToken: carolToken)])
        #expect(reports.map(\.success) == [true, false])
        #expect(reports.last?.error == .internalError)
        await store.close()
    }

    @Test func queryWithoutKeysAndNonContactRegistrations() async throws {
        let (server, store) = try await makeServer()
        let empty = try StatusTestClient.open(try await server.handle(try StatusTestClient.queryMessage(publicKeys: [])).get())
        let emptyResponse = try Protobuf_PushNotificationQueryResponse(serializedBytes: empty.payload)
        #expect(!emptyResponse.success)
        #expect(!emptyResponse.messageID.isEmpty)
        let token = UUID().uuidString.lowercased()
        let r = try bob.registration(server: V.server.publicKey, accessToken: token)
        #expect(try await register(server, try bob.registrationMessage(r, server: V.server.publicKey)).success)
        let answer = try StatusTestClient.open(
            try await server.handle(try StatusTestClient.queryMessage(publicKeys: [bob.hashedKey])).get())
        let info = try #require(try Protobuf_PushNotificationQueryResponse(serializedBytes: answer.payload).info.first)
        #expect(info.accessToken == token)
        #expect(info.allowedKeyList.isEmpty)
        #expect(StatusCrypto.verifyGrant([UInt8](info.grant), client: V.bob.publicKey, server: answer.signer, accessToken: token))
        await store.close()
    }
}
