import Foundation
import Logging
import Metrics
import Pushkins
import Synchronization

@testable import StatusAdapter

/// Records what the Status server would send, and answers as scripted per token.
final class RecordingSender: StatusSender {
    struct Sent: Sendable {
        var platform: StatusPlatform
        var token: String
        var message: String
        var title: String?
        var topic: String?
        var data: JSONObject
    }
    private let state = Mutex<(sent: [Sent], outcomes: [String: DeviceOutcome])>(([], [:]))

    func script(_ token: String, _ outcome: DeviceOutcome) { state.withLock { $0.outcomes[token] = outcome } }
    var sent: [Sent] { state.withLock { $0.sent } }

    func send(
        platform: StatusPlatform, token: String, message: String, title: String?, topic: String?, data: JSONObject, context: DispatchContext
    ) async -> DeviceOutcome {
        state.withLock {
            $0.sent.append(Sent(platform: platform, token: token, message: message, title: title, topic: topic, data: data))
            return $0.outcomes[token] ?? .delivered
        }
    }

    func pushkinName(_ platform: StatusPlatform) -> String? { platform == .ios ? "ios-app" : "android-app" }
}

struct TestMetrics {
    static let factory: any MetricsFactory = NOOPMetricsHandler.instance
}

func temporaryPath(_ name: String) -> String {
    let dir = NSTemporaryDirectory() + "herald-status-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir + "/" + name
}

/// A server with the vectors' identity over a fresh SQLite store.
func makeServer(
    sender: RecordingSender = RecordingSender(), identity: Secp256k1.PrivateKey = V.server, config: StatusConfig = StatusConfig()
)
    async throws -> (StatusServer, any StatusStore)
{
    let store = try SQLiteStatusStore(path: temporaryPath("status.sqlite"))
    try await store.migrate()
    var logger = Logger(label: "status-test")
    logger.logLevel = .critical
    return (
        StatusServer(identity: identity, config: config, store: store, delivery: sender, logger: logger, metrics: TestMetrics.factory),
        store
    )
}
