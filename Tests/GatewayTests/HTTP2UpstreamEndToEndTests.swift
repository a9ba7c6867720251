import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway

/// FCM, Huawei, Web Push and UnifiedPush through real sockets, with each fake behind a TLS front
/// that offers HTTP/2 and HTTP/1.1 by ALPN (as Google's, Mozilla's and Apple's front ends do) or
/// HTTP/1.1 only: Herald speaks HTTP/2 where it is offered, on one connection per origin, and
/// HTTP/1.1 where it is not; GOAWAY, a reset stream, the server's `MAX_CONCURRENT_STREAMS` and
/// the request timeout end as they do over HTTP/1.1 (docs/operations.md, "Upstream connections").
@Suite struct HTTP2UpstreamEndToEndTests {
    static func pki() throws -> TestPKI { try TestPKI(directory: ScratchDirectory.make("herald-h2-upstreams")) }

    struct FCMSetup {
        let herald: InMemoryGateway
        let fcm: FakeFCM
        let front: TLSFront

        func stop() async {
            await herald.stop()
            await front.stop()
            await fcm.stop()
        }
    }

    func startFCM(
        offer: TLSFront.Offer = .http2AndHTTP1, maxConcurrentStreams: Int = 100, extra: String = "",
        clock: any HeraldClock = SystemClock()
    ) async throws -> FCMSetup {
        let pki = try Self.pki()
        let fcm = try await FakeFCM.start(directory: temporaryDirectory())
        let front = try await TLSFront.start(pki: pki, handler: fcm, offer: offer, maxConcurrentStreams: maxConcurrentStreams)
        let apps = """
              com.example.gcm:
                type: gcm
                api_version: v1
                project_id: \(fcm.projectId)
                service_account_file: \(fcm.serviceAccountFile)
                base_url: \(front.baseURL)
                tls_ca_file: \(pki.caFile)
                retry_initial_backoff: 0.01
                retry_max_backoff: 0.05
            \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps), clock: clock)
        return FCMSetup(herald: herald, fcm: fcm, front: front)
    }

    func fcmDevice(_ pushkey: String) -> JSONValue {
        ["app_id": "com.example.gcm", "pushkey": .string(pushkey), "data": [:]]
    }

    @Test func fcmIsSpokenToOverHTTP2OnOneConnection() async throws {
        let setup = try await startFCM()
        let tokens = (0..<10).map { "token-\($0)" }
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e", "room_id": "!r"], devices: tokens.map(fcmDevice)))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.fcm.received.map(\.tokens).flatMap { $0 }.sorted() == tokens.sorted())
        #expect(setup.fcm.received.allSatisfy { $0.status == 200 })
        #expect(setup.front.http2Connections == 1)
        #expect(setup.front.http1Connections == 0)
    }

    @Test func fcmBehindAnHTTP1OnlyFrontIsSpokenToOverHTTP1() async throws {
        let setup = try await startFCM(offer: .http1Only)
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [fcmDevice("t1")]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.fcm.received.map(\.tokens) == [["t1"]])
        #expect(setup.front.http2Connections == 0)
        #expect(setup.front.http1Connections >= 1)
    }

    @Test func withHTTP2OffFCMIsSpokenToOverHTTP1() async throws {
        let setup = try await startFCM(extra: "http2: false")
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [fcmDevice("t1")]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.front.http2Connections == 0)
        #expect(setup.front.http1Connections == 1)
    }

    @Test func aGoAwayMovesTheNextPushToANewConnectionAndNothingIsSentTwice() async throws {
        let setup = try await startFCM()
        setup.front.goAway(afterAnswers: 1)
        let first = try await setup.herald.notify(notifyBody(["event_id": "$1"], devices: [fcmDevice("a")]))
        let second = try await setup.herald.notify(notifyBody(["event_id": "$2"], devices: [fcmDevice("b")]))
        await setup.stop()
        #expect(first.json == ["rejected": []])
        #expect(second.json == ["rejected": []])
        #expect(setup.fcm.received.map(\.tokens) == [["a"], ["b"]])
        #expect(setup.front.http2Connections == 2)
    }

    @Test func theServersMaxConcurrentStreamsIsKeptAndEveryPushArrives() async throws {
        let setup = try await startFCM(maxConcurrentStreams: 2)
        let tokens = (0..<12).map { "t\($0)" }
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: tokens.map(fcmDevice)))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.fcm.received.map(\.tokens).flatMap { $0 }.sorted() == tokens.sorted())
        #expect(setup.front.maxInFlight <= 2)
        #expect(setup.front.http2Connections == 1)
    }

    /// FCM holds both attempts on its HTTP/2 connection: each stream is cut at `request_timeout`
    /// (as shipped, 10 s, on the test's clock), and the notify is answered 502 for its retry.
    @Test func aTimedOutStreamIsRetriedWithinTheDeadlineThen502() async throws {
        let clock = ManualClock()
        let setup = try await startFCM(extra: "request_timeout: 10\nmax_attempts: 2", clock: clock)
        let release = TestEvent()
        setup.fcm.script("slow", .hold(release, then: .accept))
        async let answered = setup.herald.notify(notifyBody(["event_id": "$e"], devices: [fcmDevice("slow")]))
        let timedOut = await timingOut(clock, attempts: 2) { setup.fcm.arrived(token: "slow") }
        let response = try await answered
        release.raise()
        await setup.stop()
        #expect(timedOut)
        #expect(response.status == 502)
        #expect(setup.fcm.arrived(token: "slow") == 2)
        #expect(setup.front.http1Connections == 0)
    }

    // MARK: Huawei

    @Test(arguments: [TLSFront.Offer.http2AndHTTP1, .http1Only])
    func huaweisBothAPIsAreSpokenToOverWhatTheServerOffers(_ offer: TLSFront.Offer) async throws {
        let pki = try Self.pki()
        let hms = try await FakeHMS.start(directory: temporaryDirectory())
        let front = try await TLSFront.start(pki: pki, handler: hms, offer: offer)
        let apps = HMSEndToEndTests.apps(hms, appKeys: "tls_ca_file: \(pki.caFile)").replacingOccurrences(
            of: "base_url: \(hms.baseURL)", with: "base_url: \(front.baseURL)")
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        let devices: [JSONValue] = [
            ["app_id": .string(HMSEndToEndTests.android), "pushkey": "android-token"],
            ["app_id": .string(HMSEndToEndTests.harmony), "pushkey": "harmony-token"],
        ]
        let response = try await herald.notify(notifyBody(["event_id": "$e", "room_id": "!r"], devices: devices))
        await herald.stop()
        await front.stop()
        await hms.stop()
        #expect(response.json == ["rejected": []])
        #expect(hms.problems == [])
        #expect(hms.received.count == 2)
        if offer == .http2AndHTTP1 {
            // One connection per pushkin: each app has its own transport to the same origin.
            #expect(front.http2Connections == 2)
            #expect(front.http1Connections == 0)
        } else {
            #expect(front.http2Connections == 0)
            #expect(front.http1Connections >= 2)
        }
    }

    // MARK: Web Push and UnifiedPush

    struct WebPushSetup {
        let herald: InMemoryGateway
        let service: FakeWebPushService
        let front: TLSFront

        func stop() async {
            await herald.stop()
            await front.stop()
            await service.stop()
        }
    }

    func startWebPush(offer: TLSFront.Offer = .http2AndHTTP1, extra: String = "") async throws -> WebPushSetup {
        let pki = try Self.pki()
        let service = try await FakeWebPushService.start()
        let front = try await TLSFront.start(pki: pki, handler: service, offer: offer)
        service.serve(behind: front.baseURL)
        let app = webpushApp("com.example.webpush", directory: temporaryDirectory(), extra: "tls_ca_file: \(pki.caFile)\n" + extra)
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: app))
        return WebPushSetup(herald: herald, service: service, front: front)
    }

    func webPushDevice(_ s: FakeWebPushService.Subscription) -> JSONValue {
        [
            "app_id": "com.example.webpush", "pushkey": .string(s.p256dh),
            "data": ["endpoint": .string(s.endpoint), "auth": .string(s.auth)],
        ]
    }

    @Test(arguments: [TLSFront.Offer.http2AndHTTP1, .http1Only])
    func webPushMessagesArriveDecryptableOverEitherProtocol(_ offer: TLSFront.Offer) async throws {
        let setup = try await startWebPush(offer: offer)
        let subs = (0..<5).map { _ in setup.service.subscribe() }
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e", "room_id": "!r"], devices: subs.map(webPushDevice)))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.service.received.map(\.path).sorted() == subs.map(\.path).sorted())
        #expect(setup.service.received.allSatisfy { $0.problems.isEmpty })
        if offer == .http2AndHTTP1 {
            #expect(setup.front.http2Connections == 1)
            #expect(setup.front.http1Connections == 0)
        } else {
            #expect(setup.front.http2Connections == 0)
        }
    }

    @Test func aResetStreamIsRetriedAndThePushArrivesOnce() async throws {
        let setup = try await startWebPush()
        let sub = setup.service.subscribe()
        setup.front.resetNextStreams(1)
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [webPushDevice(sub)]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.front.resets == 1)
        #expect(setup.service.received(for: sub).count == 1)
        #expect(setup.front.http2Connections == 1)
    }

    @Test func aPushServiceRefusingOverHTTP2StillRejectsTheDeadSubscription() async throws {
        let setup = try await startWebPush()
        let sub = setup.service.subscribe(behavior: .respond(status: 410))
        let response = try await setup.herald.notify(notifyBody(["event_id": "$e"], devices: [webPushDevice(sub)]))
        await setup.stop()
        #expect(response.json == ["rejected": [.string(sub.p256dh)]])
        #expect(setup.front.http2Connections == 1)
    }

    @Test func unifiedPushIsSpokenToOverHTTP2() async throws {
        let pki = try Self.pki()
        let distributor = try await FakeUnifiedPushDistributor.start()
        let front = try await TLSFront.start(pki: pki, handler: distributor)
        let apps = """
              "im.fluffychat.*":
                type: unifiedpush
                allow_private_endpoints: true
                tls_ca_file: \(pki.caFile)

            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        let endpoint = front.rebase(distributor.endpoint("phone"))
        let device: JSONValue = ["app_id": "im.fluffychat.app", "pushkey": .string(endpoint), "data": [:]]
        let response = try await herald.notify(notifyBody(["event_id": "$e", "room_id": "!r"], devices: [device]))
        await herald.stop()
        await front.stop()
        await distributor.stop()
        #expect(response.json == ["rejected": []])
        #expect(distributor.received.map(\.path) == ["/up/phone"])
        #expect(front.http2Connections == 1)
    }
}
