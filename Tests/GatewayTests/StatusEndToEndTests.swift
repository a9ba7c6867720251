import Crypto
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import StatusAdapter
import SwiftProtobuf
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// The Status server over HTTP: a test client registers, queries and sends; the fake APNs and
/// FCM receive what gorush would have sent; rejected tokens come back as NOT_REGISTERED.
@Suite struct StatusEndToEndTests {
    struct Setup {
        let herald: RunningGateway
        let apns: FakeAPNs
        let fcm: FakeFCM
        let feedback: FakeWebPushService

        func stop() async {
            await herald.stop()
            await apns.stop()
            await fcm.stop()
            await feedback.stop()
        }

        func post(_ path: String, _ body: [UInt8]) async throws -> TestResponse {
            try await herald.request(.POST, path, body: body)
        }

        func serverKey() async throws -> Secp256k1.PublicKey {
            let identity = try await herald.request(.GET, "/_status/v1/identity")
            let hex = try #require(identity.json?["public_key"]?.stringValue)
            let bytes = try #require([UInt8](hex: hex))
            return try Secp256k1.PublicKey(bytes: bytes)
        }
    }

    func start(statusExtra: String = "", top: String = "", clock: any HeraldClock = SystemClock()) async throws -> Setup {
        let dir = temporaryDirectory()
        let pki = try TestPKI(directory: dir)
        let key = P256.Signing.PrivateKey()
        try key.pemRepresentation.write(toFile: "\(dir)/k.p8", atomically: true, encoding: .utf8)
        let apns = try await FakeAPNs.start(
            pki: pki, topic: "im.status.ethereum", auth: .token(keyId: "K1", teamId: "T1", publicKey: key.publicKey))
        let fcm = try await FakeFCM.start(directory: dir)
        let feedback = try await FakeWebPushService.start()
        let apps = """
              im.status.ios:
                type: apns
                keyfile: \(dir)/k.p8
                key_id: K1
                team_id: T1
                topic: im.status.ethereum
                base_url: \(apns.baseURL)
                tls_ca_file: \(pki.caFile)
                retry_initial_backoff: 0.01
              im.status.android:
                type: gcm
                api_version: v1
                project_id: \(fcm.projectId)
                service_account_file: \(fcm.serviceAccountFile)
                base_url: \(fcm.baseURL)
                retry_initial_backoff: 0.01

            """
        let status = """
            status:
              apns_app: im.status.ios
              fcm_app: im.status.android
              store: \(dir)/status.sqlite
            \(statusExtra)
            """
        let herald = try await RunningGateway.start(gatewayYAML(apps: apps, extra: top + status), clock: clock)
        return Setup(herald: herald, apns: apns, fcm: fcm, feedback: feedback)
    }

    func registrationResponse(_ response: TestResponse) throws -> Protobuf_PushNotificationRegistrationResponse {
        #expect(response.status == 200)
        #expect(response.headers.first(name: "Content-Type") == "application/x-protobuf")
        return try Protobuf_PushNotificationRegistrationResponse(serializedBytes: try StatusTestClient.open(response.body).payload)
    }

    @Test func registerQueryAndSendThroughAPNsAndFCM() async throws {
        let setup = try await start()
        let server = try await setup.serverKey()
        let bob = StatusTestClient(), carol = StatusTestClient(), alice = StatusTestClient()
        let bobToken = UUID().uuidString.lowercased(), carolToken = UUID().uuidString.lowercased()
        let apnsToken = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let bobRegistration = try bob.registration(server: server, token: apnsToken, accessToken: bobToken)
        let carolRegistration = try carol.registration(
            server: server, token: "fcm-token-1", tokenType: .firebaseToken, accessToken: carolToken)
        #expect(
            try registrationResponse(
                try await setup.post("/_status/v1/message", try bob.registrationMessage(bobRegistration, server: server))
            ).success)
        #expect(
            try registrationResponse(
                try await setup.post("/_status/v1/message", try carol.registrationMessage(carolRegistration, server: server))
            ).success)

        // Alice looks Bob up, and checks his grant against the server that answered.
        let answer = try await setup.post("/_status/v1/message", try StatusTestClient.queryMessage(publicKeys: [bob.hashedKey]))
        let opened = try StatusTestClient.open(answer.body)
        #expect(opened.signer == server)
        let info = try #require(try Protobuf_PushNotificationQueryResponse(serializedBytes: opened.payload).info.first)
        #expect(info.accessToken == bobToken)
        #expect(StatusCrypto.verifyGrant([UInt8](info.grant), client: bob.identity.publicKey, server: server, accessToken: bobToken))

        var request = Protobuf_PushNotificationRequest()
        request.messageID = Data(Keccak.keccak256(Array("hello".utf8)))
        request.requests = [alice.notification(to: bob, accessToken: bobToken), alice.notification(to: carol, accessToken: carolToken)]
        let pushed = try await setup.post("/_status/v1/message", try StatusTestClient.pushMessage(request))
        await setup.stop()
        #expect(pushed.status == 200)
        let reports = try Protobuf_PushNotificationResponse(serializedBytes: try StatusTestClient.open(pushed.body).payload).reports
        #expect(reports.map(\.success) == [true, true])

        let ios = try #require(setup.apns.received.first)
        #expect(ios.token == apnsToken)
        #expect(ios.headers["apns-topic"] == "im.status.ethereum")
        // What status-go's push server asks gorush for today: a push that sounds, that the app may
        // wake for to decrypt, with a link to the chats.
        #expect(ios.payload?["aps"] == ["alert": "You have a new message", "content-available": 1, "sound": "default"])
        #expect(ios.headers["apns-priority"] == "10")
        #expect(ios.headers["apns-push-type"] == "alert")
        #expect(ios.payload?["deepLink"] == "status-app://chats")
        #expect(ios.payload?["chatId"] == .string("0x" + Keccak.shake256(Array(alice.id.utf8)).hex))
        #expect(ios.payload?["publicKey"] == .string("0x" + bob.hashedKey.hex))
        #expect(ios.payload?["encryptedMessage"] == "0x")
        let android = try #require(setup.fcm.received.first?.body?["message"])
        #expect(android["token"] == "fcm-token-1")
        #expect(android["notification"] == ["body": "You have a new message"])
        #expect(android["data"]?["publicKey"] == .string("0x" + carol.hashedKey.hex))
    }

    @Test func aTokenTheUpstreamRejectsIsNotRegisteredAndDisappears() async throws {
        let setup = try await start()
        let server = try await setup.serverKey()
        let bob = StatusTestClient(), alice = StatusTestClient()
        let token = UUID().uuidString.lowercased()
        let apnsToken = "abcdef0123456789"
        setup.apns.script(apnsToken, .fail(410, "Unregistered"))
        let registration = try bob.registration(server: server, token: apnsToken, accessToken: token)
        _ = try await setup.post("/_status/v1/message", try bob.registrationMessage(registration, server: server))
        var request = Protobuf_PushNotificationRequest()
        request.messageID = Data([9])
        request.requests = [alice.notification(to: bob, accessToken: token)]
        let pushed = try await setup.post("/_status/v1/message", try StatusTestClient.pushMessage(request))
        let report = try Protobuf_PushNotificationResponse(serializedBytes: try StatusTestClient.open(pushed.body).payload).reports.first
        let answer = try await setup.post("/_status/v1/message", try StatusTestClient.queryMessage(publicKeys: [bob.hashedKey]))
        let metrics = try await setup.herald.metricsText()
        // Answerable by the request's message id, as status-go names it, and by the device token.
        let byMessage = try await setup.herald.deliveries(event: "0x09")
        let byToken = try await setup.herald.deliveries(pushkey: apnsToken)
        await setup.stop()
        #expect(byMessage.count == 1 && byToken == byMessage)
        #expect(byMessage.first?["front_end"] == "status" && byMessage.first?["event_id"] == "0x09")
        #expect(byMessage.first?["app_id"] == "im.status.ios" && byMessage.first?["outcome"] == "rejected")
        #expect(byMessage.first?["reason"] == "Unregistered" && byMessage.first?["attempts"] == 1)
        #expect(byMessage.first?["pushkey"]?.stringValue == Redaction.pushkey(apnsToken))
        #expect(report?.error == .notRegistered)
        #expect(try Protobuf_PushNotificationQueryResponse(serializedBytes: try StatusTestClient.open(answer.body).payload).info.isEmpty)
        #expect(metrics.contains(#"herald_rejected_pushkeys_total{pushkin="im.status.ios"} 1"#))
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="im.status.ios",outcome="rejected",reason="Unregistered"} 1"#))
    }

    @Test func badRequestsGetClearErrors() async throws {
        let setup = try await start(statusExtra: "  max_message_bytes: 4096")
        let notProtobuf = try await setup.post("/_status/v1/message", [0xFF, 0xFF])
        var amm = Protobuf_ApplicationMetadataMessage()
        amm.payload = Data([1])
        amm.type = .pushNotificationQuery
        let unsigned = try await setup.post("/_status/v1/message", [UInt8](try amm.serializedData()))
        let wrongType = try await setup.post(
            "/_status/v1/message", try StatusEnvelope.wrap(payload: [], type: 15, key: Secp256k1.PrivateKey()))
        let tooLarge = try await setup.post("/_status/v1/message", [UInt8](repeating: 0, count: 5000))
        let get = try await setup.herald.request(.GET, "/_status/v1/message")
        let health = try await setup.herald.request(.GET, "/health")
        await setup.stop()
        #expect(notProtobuf.status == 400)
        #expect(notProtobuf.json?["errcode"] == "M_NOT_PROTOBUF")
        #expect(unsigned.status == 400)
        #expect(unsigned.json?["errcode"] == "M_BAD_SIGNATURE")
        #expect(wrongType.status == 400)
        #expect(wrongType.json?["errcode"] == "M_UNRECOGNIZED")
        #expect(tooLarge.status == 413)
        #expect(get.status == 405)
        #expect(health.status == 200)
    }

    // MARK: gorush drop-in

    @Test func gorushRequestFromStatusGoIsAnsweredAtOnceAndDelivered() async throws {
        let setup = try await start()
        let body =
            #"{"notifications":[{"tokens":["0a0b0c"],"platform":1,"message":"You have a new message","topic":"im.status.ethereum","data":{"encryptedMessage":"0x","chatId":"0x1d","publicKey":"0x07"}},{"tokens":["fcm-1","fcm-2"],"platform":2,"message":"Someone mentioned you","topic":"","data":{"encryptedMessage":"0x","chatId":"0x1d","publicKey":"0x07"}}]}"#
        let response = try await setup.post("/api/push", Array(body.utf8))
        #expect(response.status == 200)
        #expect(response.json == ["success": "ok", "counts": 3, "logs": []])
        // Delivery is asynchronous, as gorush's default: wait for it.
        var stats = try await setup.herald.request(.GET, "/api/stat/app")
        try await eventually {
            stats = try await setup.herald.request(.GET, "/api/stat/app")
            return stats.json?["success_tasks"] == 3
        }
        let healthz = try await setup.herald.request(.GET, "/healthz")
        await setup.stop()
        #expect(
            setup.apns.received.first?.payload == [
                "aps": ["alert": "You have a new message"], "encryptedMessage": "0x", "chatId": "0x1d", "publicKey": "0x07",
            ])
        #expect(setup.apns.received.first?.headers["apns-topic"] == "im.status.ethereum")
        #expect(Set(setup.fcm.received.compactMap { $0.body?["message"]?["token"]?.stringValue }) == ["fcm-1", "fcm-2"])
        #expect(setup.fcm.received.first?.body?["message"]?["notification"] == ["body": "Someone mentioned you"])
        #expect(stats.json?["success_tasks"] == 3)
        #expect(healthz.status == 200)
    }

    /// In `sync` mode a request's platforms are sent side by side: with APNs holding the iOS
    /// notification's push, the Android one's reaches FCM meanwhile (one after the other, it
    /// reached FCM only once APNs had answered).
    @Test func aSynchronousGorushRequestsPlatformsAreSentSideBySide() async throws {
        let setup = try await start(statusExtra: "  gorush:\n    sync: true")
        let release = TestEvent()
        setup.apns.script("0a0b0c", .hold(release, then: .accept))
        let body =
            #"{"notifications":[{"tokens":["0a0b0c"],"platform":1,"message":"hi"},{"tokens":["fcm-1"],"platform":2,"message":"hi"}]}"#
        async let answer = setup.post("/api/push", Array(body.utf8))
        let sideBySide = await eventually(within: .seconds(60)) {
            setup.apns.arrived(token: "0a0b0c") == 1 && setup.fcm.received.count == 1
        }
        release.raise()
        let answered = try await answer
        await setup.stop()
        #expect(sideBySide, "FCM's push waited for APNs's")
        #expect(answered.status == 200 && answered.json == ["success": "ok", "counts": 2, "logs": []])
        #expect(setup.apns.received.count == 1 && setup.fcm.received.count == 1)
    }

    @Test(arguments: [
        (#"{}"#, "Missing notifications field."), (#"{"notifications":[]}"#, "Notifications field is empty."),
        ("nope", "Missing notifications field."),
        (#"{"notifications":[{"platform":1}]}"#, "Each notification needs tokens and a platform."),
    ])
    func gorushErrorsUseGorushsShape(_ body: String, _ message: String) async throws {
        let setup = try await start()
        let response = try await setup.post("/api/push", Array(body.utf8))
        await setup.stop()
        #expect(response.status == 400)
        #expect(response.json == ["code": 400, "message": .string(message)])
    }

    /// gorush's Android notifications and a Status push reach an installation id as
    /// `message.fid`, a registration token as `message.token` (gorush itself has no FID target).
    @Test func gorushAndStatusPushesReachAnInstallationIdAsAnFid() async throws {
        let setup = try await start(statusExtra: "  gorush:\n    sync: true")
        let fid = "eKmDbRLmQS6q2ye8hyN0gA"
        let token = "fcm-token-" + String(repeating: "t", count: 40)
        let gorush = try await setup.post(
            "/api/push", Array(#"{"notifications":[{"tokens":["\#(fid)","\#(token)"],"platform":2,"message":"hi"}]}"#.utf8))
        let server = try await setup.serverKey()
        let carol = StatusTestClient(), alice = StatusTestClient()
        let carolToken = UUID().uuidString.lowercased()
        let statusFid = "c3RhdHVzLWZpZC0xMjM0NQ"
        let registration = try carol.registration(server: server, token: statusFid, tokenType: .firebaseToken, accessToken: carolToken)
        let registered = try await setup.post("/_status/v1/message", try carol.registrationMessage(registration, server: server))
        var request = Protobuf_PushNotificationRequest()
        request.messageID = Data(Keccak.keccak256(Array("fid".utf8)))
        request.requests = [alice.notification(to: carol, accessToken: carolToken)]
        let pushed = try await setup.post("/_status/v1/message", try StatusTestClient.pushMessage(request))
        await setup.stop()
        #expect(gorush.status == 200 && gorush.json?["logs"] == [])
        #expect(try registrationResponse(registered).success)
        let reports = try Protobuf_PushNotificationResponse(serializedBytes: try StatusTestClient.open(pushed.body).payload).reports
        #expect(reports.map(\.success) == [true])
        let targets = Dictionary(setup.fcm.received.map { ($0.tokens[0], $0.target) }) { a, _ in a }
        #expect(targets[fid] == "fid")
        #expect(targets[token] == "token")
        #expect(targets[statusFid] == "fid")
        #expect(setup.fcm.received.allSatisfy { $0.status == 200 })
    }

    /// A gorush notification with a `notif_id` is answerable: the delivery trace (the same
    /// endpoint as Matrix's, and `herald trace`) has each token under that id, with its outcome,
    /// attempts and APNs's `apns-id`.
    @Test func aGorushNotificationIsInTheDeliveryTraceByItsNotifId() async throws {
        let setup = try await start(statusExtra: "  gorush:\n    sync: true")
        setup.apns.script("dead02", .fail(410, "Unregistered"))
        let body = #"{"notifications":[{"tokens":["0a0b0c","dead02"],"platform":1,"message":"hi","notif_id":"n-42"}]}"#
        let answer = try await setup.post("/api/push", Array(body.utf8))
        let trace = try await setup.herald.deliveries(event: "n-42")
        let untraced = try await setup.herald.deliveries(event: "n-43")
        let byToken = try await setup.herald.deliveries(pushkey: "dead02")
        await setup.stop()
        #expect(answer.status == 200)
        #expect(byToken.count == 1 && byToken.first?["event_id"] == "n-42" && byToken.first?["front_end"] == "gorush")
        let byOutcome = Dictionary(trace.compactMap { entry in entry["outcome"]?.stringValue.map { ($0, entry) } }) { a, _ in a }
        #expect(trace.count == 2)
        #expect(byOutcome["delivered"]?["attempts"] == 1 && byOutcome["delivered"]?["provider_id"]?.stringValue != nil)
        #expect(byOutcome["delivered"]?["app_id"] == "im.status.ios")
        #expect(byOutcome["rejected"]?["reason"] == "Unregistered")
        #expect(untraced.isEmpty)
    }

    @Test func gorushLimitAndSyncModeWithFeedback() async throws {
        let feedbackPath = "feedback-\(UUID().uuidString)"
        let receiver = try await FakeWebPushService.start()
        let hook = receiver.subscribe(feedbackPath)
        let second = try await start(
            statusExtra: "  gorush:\n    max_notification: 2\n    sync: true\n    feedback_hook_url: \(hook.endpoint)")
        second.apns.script("dead01", .fail(410, "Unregistered"))
        let over = #"{"notifications":[{"tokens":["a"],"platform":1},{"tokens":["b"],"platform":1},{"tokens":["c"],"platform":1}]}"#
        let overLimit = try await second.post("/api/push", Array(over.utf8))
        let sync = try await second.post(
            "/api/push", Array(#"{"notifications":[{"tokens":["dead01","0b"],"platform":1,"message":"hi"}]}"#.utf8))
        await second.stop()
        await receiver.stop()
        #expect(overLimit.status == 400)
        #expect(overLimit.json?["message"] == "Number of notifications(3) over limit(2)")
        #expect(sync.status == 200)
        let logs = try #require(sync.json?["logs"]?.arrayValue)
        #expect(logs.count == 1)
        #expect(logs.first?["type"] == "failed-push")
        #expect(logs.first?["token"] == "dead01")
        #expect(logs.first?["platform"] == "ios")
        #expect(receiver.received.count == 1)  // the feedback hook got the failure
        let hookBody = String(decoding: receiver.received.first?.body ?? [], as: UTF8.self)
        #expect(hookBody.contains("dead01") && hookBody.contains("failed-push"))
    }
}

extension StatusEndToEndTests {
    @Test func aFullGorushQueueIs503WithRetryAfterAndQueuesNothing() async throws {
        let setup = try await start(statusExtra: "  gorush:\n    queue_max_bytes: 1024")
        let message = String(repeating: "m", count: 600)
        let body =
            #"{"notifications":[{"tokens":["0a"],"platform":1,"message":"\#(message)"},{"tokens":["0b"],"platform":1,"message":"\#(message)"}]}"#
        let full = try await setup.post("/api/push", Array(body.utf8))
        let fits = try await setup.post("/api/push", Array(#"{"notifications":[{"tokens":["0c"],"platform":1,"message":"hi"}]}"#.utf8))
        await eventually { !setup.apns.received.isEmpty }
        let stats = try await setup.herald.request(.GET, "/api/stat/app")
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(metrics.contains("herald_gorush_queue_jobs ") && metrics.contains("herald_gorush_queue_bytes "))
        #expect(full.status == 503)
        #expect(full.headers.first(name: "retry-after") == "5")
        #expect(full.json == ["code": 503, "message": "Queue is full, try again later."])
        #expect(fits.status == 200)
        // All or none: neither notification of the refused request was queued or sent.
        #expect(setup.apns.received.map(\.token) == ["0c"])
        #expect(stats.json?["submitted_tasks"] == 1)
    }
}
