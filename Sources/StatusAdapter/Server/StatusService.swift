import Foundation
import Logging
import Metrics
import Pushkins
import Synchronization

/// The Status side of a running Herald: the store, the protocol server and the gorush API.
public final class StatusService: Sendable {
    public let server: StatusServer
    public let gorush: GorushAPI?
    let store: any StatusStore
    private let workers: Task<Void, Never>?

    /// Opens the store (creating or upgrading its schema), loads or creates the identity, and
    /// starts the gorush workers.
    public static func start(config: StatusConfig, delivery: any StatusSender, logger: Logger, metrics: any MetricsFactory) async throws
        -> StatusService
    {
        let store: any StatusStore
        switch config.store {
        case .sqlite(let path): store = try SQLiteStatusStore(path: path)
        case .postgres(let url): store = try PostgresStatusStore(url: url, logger: logger)
        }
        do {
            try await store.migrate()
            let secret = try await store.identity(orCreate: config.identity ?? Secp256k1.PrivateKey().rawRepresentation)
            let identity = try Secp256k1.PrivateKey(rawRepresentation: config.identity ?? secret)
            let server = StatusServer(
                identity: identity, config: config, store: store, delivery: delivery, logger: logger, metrics: metrics)
            let gorush =
                config.gorush.enabled ? GorushAPI(config: config.gorush, delivery: delivery, logger: logger, metrics: metrics) : nil
            logger.notice(
                "Status push-notification server ready",
                metadata: ["public_key": "0x\(identity.publicKey.compressed.hex)", "gorush": "\(gorush != nil)"])
            return StatusService(server: server, gorush: gorush, store: store)
        } catch {
            await store.close()
            throw error
        }
    }

    private init(server: StatusServer, gorush: GorushAPI?, store: any StatusStore) {
        self.server = server
        self.gorush = gorush
        self.store = store
        self.workers = gorush.map { api in Task { await api.run() } }
    }

    /// Finishes queued gorush work, then closes the store.
    public func shutdown() async {
        gorush?.finish()
        await workers?.value
        await store.close()
    }
}
