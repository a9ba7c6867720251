import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
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
        var notification: GorushNotification
        var message: String { notification.message }
        var title: String? { notification.title.isEmpty ? nil : notification.title }
        var topic: String? { notification.topic.isEmpty ? nil : notification.topic }
        var data: JSONObject { notification.data }
    }
    private let state = Mutex<(sent: [Sent], outcomes: [String: DeviceOutcome])>(([], [:]))

    func script(_ token: String, _ outcome: DeviceOutcome) { state.withLock { $0.outcomes[token] = outcome } }
    var sent: [Sent] { state.withLock { $0.sent } }

    func send(_ notification: GorushNotification, platform: StatusPlatform, token: String, context: DispatchContext) async
        -> DeviceResult
    {
        state.withLock {
            $0.sent.append(Sent(platform: platform, token: token, notification: notification))
            return DeviceResult($0.outcomes[token] ?? .delivered)
        }
    }

    func pushkinName(_ platform: StatusPlatform) -> String? { platform == .ios ? "ios-app" : "android-app" }
}

struct TestMetrics {
    static let factory: any MetricsFactory = NOOPMetricsHandler.instance
}

func temporaryPath(_ name: String) -> String {
    ScratchDirectory.make("herald-status") + "/" + name
}

/// A server with the vectors' identity over a fresh SQLite store.
func makeServer(
    sender: RecordingSender = RecordingSender(), identity: Secp256k1.PrivateKey = V.server, config: StatusConfig = StatusConfig()
)
    async throws -> (StatusServer, any StatusStore)
{
    let store = try SQLiteStatusStore(path: temporaryPath("status.sqlite"), clock: SystemClock())
    try await store.migrate()
    var logger = Logger(label: "status-test")
    logger.logLevel = .critical
    return (
        StatusServer(
            identity: identity, config: config, store: store, delivery: sender, logger: logger, metrics: TestMetrics.factory,
            clock: SystemClock()),
        store
    )
}

/// A PostgreSQL store with its connection pool running for the test (in Herald, the pool runs in
/// the gateway's service group); `close()` stops the pool. Its queries wait up to 60 s, not the
/// default 5: these tests are about what the store keeps, and a query on a machine whose cores the
/// whole suite shares once took longer (`PostgresStoreBoundsTests` holds the default's behaviour).
final class TestPostgresStore: StatusStore {
    let inner: PostgresStatusStore
    private let pool: Task<Void, Never>

    init(url: String, logger: Logger) throws {
        inner = try PostgresStatusStore(url: url, logger: logger, timeout: .seconds(60), clock: SystemClock())
        let services = inner.services
        pool = Task {
            await withTaskGroup(of: Void.self) { group in
                for service in services { group.addTask { try? await service.run() } }
            }
        }
    }

    var url: String { inner.url }
    func migrate() async throws { try await inner.migrate() }
    func identity(orCreate candidate: [UInt8]) async throws -> [UInt8] { try await inner.identity(orCreate: candidate) }
    func registration(publicKey: [UInt8], installationId: String) async throws -> StoredRegistration? {
        try await inner.registration(publicKey: publicKey, installationId: installationId)
    }
    func registrations(publicKeys: [[UInt8]]) async throws -> [StoredRegistration] { try await inner.registrations(publicKeys: publicKeys) }
    func write(_ row: StoredRegistration) async throws -> Bool { try await inner.write(row) }
    func dropRegistration(publicKey: [UInt8], installationId: String, version: UInt64) async throws {
        try await inner.dropRegistration(publicKey: publicKey, installationId: installationId, version: version)
    }
    func cachedResponse(messageId: [UInt8], now: Date) async throws -> [UInt8]? {
        try await inner.cachedResponse(messageId: messageId, now: now)
    }
    func cacheResponses(_ entries: [CachedResponse], limit: Int) async throws {
        try await inner.cacheResponses(entries, limit: limit)
    }
    func enqueueGorush(_ bodies: [[UInt8]], maxJobs: Int, maxBytes: Int) async throws -> Bool {
        try await inner.enqueueGorush(bodies, maxJobs: maxJobs, maxBytes: maxBytes)
    }
    func claimGorush(limit: Int, now: Date, until: Date) async throws -> [QueuedGorushJob] {
        try await inner.claimGorush(limit: limit, now: now, until: until)
    }
    func completeGorush(id: Int64) async throws { try await inner.completeGorush(id: id) }
    func recoverGorushClaims() async throws { try await inner.recoverGorushClaims() }
    func gorushQueueDepth() async throws -> (jobs: Int, bytes: Int) { try await inner.gorushQueueDepth() }
    func close() async {
        pool.cancel()
        await pool.value
    }
}
