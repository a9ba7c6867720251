import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@testable import Gateway

/// A notify with nothing to show (a badge update: no event) goes at normal priority to FCM and
/// Huawei, unless the app sets `badge_priority: high` (docs/compatibility/fcm.md, "Priority"):
/// Firebase deprioritizes an app whose high-priority messages do not lead to a visible
/// notification. A message keeps high priority.
@Suite struct BadgePriorityTests {
    static let badge: JSONObject = ["counts": ["unread": 4]]

    func fcmPriorities(legacy: Bool, extra: String = "") async throws -> [String?] {
        let setup = try await FCMEndToEndTests().start(legacy: legacy, extra: extra)
        let fcm = FCMEndToEndTests()
        _ = try await setup.herald.notify(notifyBody(Self.badge, devices: [fcm.device("badge-token")]))
        _ = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [fcm.device("message-token")]))
        await setup.stop()
        return ["badge-token", "message-token"].map { token in
            let body = setup.fcm.received.first { $0.tokens.contains(token) }?.body
            return legacy ? body?["priority"]?.stringValue : body?["message"]?["android"]?["priority"]?.stringValue
        }
    }

    @Test func fcmV1SendsABadgeUpdateAtNormalPriority() async throws {
        #expect(try await fcmPriorities(legacy: false) == ["normal", "high"])
        #expect(try await fcmPriorities(legacy: false, extra: "badge_priority: high") == ["high", "high"])
    }

    @Test func fcmLegacySendsABadgeUpdateAtNormalPriority() async throws {
        #expect(try await fcmPriorities(legacy: true) == ["normal", "high"])
    }

    @Test func huaweiSendsABadgeUpdateWithNormalUrgency() async throws {
        for (keys, expected) in [("", ["NORMAL", "HIGH"]), ("badge_priority: high", ["HIGH", "HIGH"])] {
            let setup = try await HMSEndToEndTests().start(appKeys: keys)
            let hms = HMSEndToEndTests()
            _ = try await setup.herald.notify(notifyBody(Self.badge, devices: [hms.device("badge-token")]))
            _ = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [hms.device("message-token")]))
            await setup.stop()
            let urgencies = ["badge-token", "message-token"].map { token in
                setup.hms.received.first { $0.tokens.contains(token) }?.body?["message"]?["android"]?["urgency"]?.stringValue
            }
            #expect(urgencies == expected, "\(keys)")
        }
    }

    @Test func checkConfigRefusesAnUnknownBadgePriority() async throws {
        let setup = try await FCMEndToEndTests().start()
        await setup.stop()
        let failure = await #expect(throws: ConfigLoading.Failure.self) {
            _ = try await RunningGateway.start(
                gatewayYAML(
                    apps: """
                          g:
                            type: gcm
                            project_id: \(setup.fcm.projectId)
                            service_account_file: \(setup.fcm.serviceAccountFile)
                            badge_priority: urgent
                        """))
        }
        #expect(failure?.errors.contains("apps.g.badge_priority: must be normal or high, got 'urgent'") == true)
    }
}
