import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@testable import Gateway

/// A credential the upstream refused is never sent again (docs/operations.md, "A refused
/// credential"): for APNs (provider token), FCM v1 (OAuth), Huawei Android (OAuth) and HarmonyOS
/// (service-account JWT), the notify after a refused one goes out with a new credential, even when
/// the refused call had no attempt left (`max_attempts: 1`) or no budget left (`retry_budget: 0`).
@Suite struct RefusedCredentialTests {
    /// One provider behind a running Herald: how to notify one of its devices, make its fake refuse
    /// credentials, and read the credential of each request the fake received.
    struct Running {
        let herald: any GatewayUnderTest
        let pushkin: String
        let notify: @Sendable (_ pushkey: String) async throws -> TestResponse
        let refuse: @Sendable (_ count: Int) -> Void
        /// (credential, status) of each request the fake received, in order.
        let sent: @Sendable () -> [(credential: String, status: Int)]
        let stop: @Sendable () async -> Void
    }

    enum Provider: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case apns, fcm, hmsAndroid, harmony
        var testDescription: String { rawValue }

        func start(appKeys: String) async throws -> Running {
            switch self {
            case .apns:
                let setup = try await APNsEndToEndTests().start(extra: appKeys)
                return Running(
                    herald: setup.herald, pushkin: "com.example.apns",
                    notify: { _ in
                        try await setup.herald.notify(
                            notifyBody(APNsEndToEndTests.message, devices: [APNsEndToEndTests().device(APNsEndToEndTests.pushkey())]))
                    },
                    refuse: { setup.apns.refuseCredentials($0) },
                    sent: { setup.apns.received.map { ($0.headers["authorization"] ?? "", $0.status) } },
                    stop: { await setup.stop() })
            case .fcm:
                let setup = try await FCMEndToEndTests().start(extra: appKeys)
                return Running(
                    herald: setup.herald, pushkin: "com.example.gcm",
                    notify: { key in
                        try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [FCMEndToEndTests().device(key)]))
                    },
                    refuse: { setup.fcm.refuseCredentials($0) },
                    sent: { setup.fcm.received.map { ($0.headers.first(name: "Authorization") ?? "", $0.status) } },
                    stop: { await setup.stop() })
            case .hmsAndroid, .harmony:
                let setup = try await HMSEndToEndTests().start(appKeys: appKeys)
                let app = self == .harmony ? HMSEndToEndTests.harmony : HMSEndToEndTests.android
                return Running(
                    herald: setup.herald, pushkin: app,
                    notify: { key in
                        try await setup.herald.notify(
                            notifyBody(APNsEndToEndTests.message, devices: [HMSEndToEndTests().device(key, app: app)]))
                    },
                    refuse: { setup.hms.refuseCredentials($0) },
                    sent: { setup.hms.received.map { ($0.headers.first(name: "Authorization") ?? "", $0.status) } },
                    stop: { await setup.stop() })
            }
        }
    }

    static let policies = ["max_attempts: 1", "max_attempts: 3\nretry_budget: 0"]

    @Test(arguments: Provider.allCases, policies)
    func theNotifyAfterARefusedCredentialGoesOutWithANewOne(_ provider: Provider, _ policy: String) async throws {
        let running = try await provider.start(appKeys: policy)
        // A first notify, so that a credential is held before the upstream starts refusing it.
        let warm = try await running.notify("device-1")
        running.refuse(1)
        let refused = try await running.notify("device-2")
        let next = try await running.notify("device-3")
        let metrics = try await running.herald.metricsText()
        await running.stop()
        #expect(warm.status == 200)
        #expect(refused.status == 502)
        #expect(next.status == 200)
        let sent = running.sent()
        try #require(sent.count == 3)
        #expect(sent.map(\.status).map { $0 >= 400 } == [false, true, false])
        #expect(sent[0].credential == sent[1].credential)  // held, then refused
        #expect(sent[2].credential != sent[1].credential)  // never sent again
        #expect(metrics.contains(#"herald_upstream_credentials_refused_total{pushkin="\#(running.pushkin)",after_renewal="false"} 1"#))
    }

    /// Refused twice in a row: the renewal within the call is refused too, the device fails, the
    /// configuration problem is counted, and the second value is dropped as well, so that the
    /// provider's recovery is picked up by the next notify.
    @Test(arguments: Provider.allCases)
    func aCredentialRefusedAfterItsRenewalIsCountedAndDroppedToo(_ provider: Provider) async throws {
        let running = try await provider.start(appKeys: "max_attempts: 3")
        running.refuse(2)
        let refused = try await running.notify("device-1")
        let next = try await running.notify("device-2")
        let metrics = try await running.herald.metricsText()
        await running.stop()
        #expect(refused.status == 502)
        #expect(next.status == 200)
        let sent = running.sent()
        try #require(sent.count == 3)
        #expect(sent.map(\.status).map { $0 >= 400 } == [true, true, false])
        #expect(Set(sent.map(\.credential)).count == 3)
        #expect(metrics.contains(#"herald_upstream_credentials_refused_total{pushkin="\#(running.pushkin)",after_renewal="false"} 1"#))
        #expect(metrics.contains(#"herald_upstream_credentials_refused_total{pushkin="\#(running.pushkin)",after_renewal="true"} 1"#))
    }
}
