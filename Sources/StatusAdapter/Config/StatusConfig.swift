package import Foundation
package import HeraldCore
import HeraldSQLite

/// The `status:` section: which push apps serve Status registrations, the identity, the store,
/// and the limits of the native and gorush-compatible APIs.
package struct StatusConfig: Sendable {
    package enum Store: Sendable, Equatable {
        case sqlite(path: String)
        case postgres(url: String)
    }

    package var enabled = false
    /// The app key each platform's pushes go through (`apns_app`, `fcm_app`, `hms_app`: the
    /// rows of `StatusPlatform`).
    package var apps: [StatusPlatform: String] = [:]
    /// A fixed identity (hex of the 32-byte secret); otherwise one is created in the store.
    package var identity: [UInt8]?
    package var store = Store.sqlite(path: "./data/status.sqlite")
    /// The SQLite file, when the store is SQLite.
    package var sqlitePath: String? {
        if case .sqlite(let path) = store { return path }
        return nil
    }
    package var maxQueryKeys = 100
    package var maxMessageBytes = 1 << 20
    package var responseCacheLifetime: TimeInterval = 86_400
    package var responseCacheLimit = 100_000
    /// Answers remembered and not yet written to the store; beyond it a push request waits for the writer.
    package var responseCacheMaxPending = 10_000
    /// The page cache of each SQLite connection, in KiB (`DurableSQLite`).
    package var sqliteCacheKiB = DurableSQLite.defaultCacheKiB
    /// How long a request waits for the PostgreSQL store before it is answered as failed for now.
    package var storeTimeout: Duration = .seconds(5)
    /// The PostgreSQL store's connections at most, per instance (`store_max_connections`).
    package var storeMaxConnections = 16

    package var gorush = Gorush()

    package struct Gorush: Sendable {
        package var enabled = true
        package var maxNotification = 100
        package var sync = false
        package var workers = 8
        /// Jobs (notifications) queued at once, in the Status store.
        package var queueSize = 8192
        /// Bytes of notifications queued at once; beyond either bound a request is answered 503.
        package var queueMaxBytes = 64 << 20
        /// How long a worker holds a job before another may take it (a worker that died).
        package var claimTimeout: Duration = .seconds(300)
        package var feedbackURL: String?
        package var feedbackTimeout: Duration = .seconds(10)
        /// gorush sends an FCM topic message for an Android notification with a `topic`; off by default.
        package var honourAndroidTopic = false
        /// The networks whose clients may use the API (gorush has no authentication at all);
        /// others get 403.
        package var allowedNetworks = IPNetwork.loopbackAndPrivate
        /// When set, `Authorization: Bearer <token>` is required too (`auth_token_file`).
        package var authToken: String?
    }

    package init() {}

    package static func read(_ config: ConfigSection?) -> StatusConfig {
        var result = StatusConfig()
        guard let config else { return result }
        result.enabled = config.bool("enabled", default: true)
        for platform in StatusPlatform.all {
            if let app = config.string(platform.configKey) { result.apps[platform] = app }
        }
        if let hex = config.string("identity"), !hex.isEmpty {
            if let bytes = [UInt8](hex: hex), (try? Secp256k1.PrivateKey(rawRepresentation: bytes)) != nil {
                result.identity = bytes
            } else {
                config.diagnostics.error(config.keyPath("identity"), "must be the hex of a 32-byte secp256k1 private key")
            }
        }
        if let store = config.string("store"), !store.isEmpty {
            if store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") {
                result.store = .postgres(url: store)
            } else if store.hasPrefix("sqlite:") {
                result.store = .sqlite(path: String(store.dropFirst("sqlite:".count)))
            } else if store.contains("://") {
                config.diagnostics.error(config.keyPath("store"), "must be a file path, sqlite:PATH or a postgres:// URL")
            } else {
                result.store = .sqlite(path: store)
            }
        }
        result.maxQueryKeys = config.int("max_query_keys", default: 100, range: 1...10_000)
        result.maxMessageBytes = config.int("max_message_bytes", default: 1 << 20, range: 1024...(16 << 20))
        result.responseCacheLifetime = config.seconds("response_cache_lifetime", default: 86_400, range: 0...(30 * 86_400)).seconds
        result.responseCacheLimit = config.int("response_cache_limit", default: 100_000, range: 0...10_000_000)
        result.responseCacheMaxPending = config.int("response_cache_max_pending", default: 10_000, range: 1...1_000_000)
        result.sqliteCacheKiB = config.int("sqlite_cache_kib", default: DurableSQLite.defaultCacheKiB, range: 16...1_048_576)
        result.storeTimeout = config.seconds("store_timeout", default: 5, range: 0.05...300)
        result.storeMaxConnections = config.int("store_max_connections", default: 16, range: 1...1000)
        if let gorush = config.map("gorush") {
            result.gorush.enabled = gorush.bool("enabled", default: true)
            result.gorush.maxNotification = gorush.int("max_notification", default: 100, range: 1...100_000)
            result.gorush.sync = gorush.bool("sync", default: false)
            result.gorush.workers = gorush.int("workers", default: 8, range: 1...1024)
            result.gorush.queueSize = gorush.int("queue_size", default: 8192, range: 1...10_000_000)
            result.gorush.queueMaxBytes = gorush.int("queue_max_bytes", default: 64 << 20, range: 1024...(64 << 30))
            result.gorush.claimTimeout = gorush.seconds("claim_timeout", default: 300, range: 1...86_400)
            result.gorush.feedbackURL = gorush.string("feedback_hook_url").flatMap { $0.isEmpty ? nil : $0 }
            result.gorush.feedbackTimeout = gorush.seconds("feedback_timeout", default: 10, range: 0.1...300)
            result.gorush.honourAndroidTopic = gorush.bool("honour_android_topic", default: false)
            if let networks = gorush.stringList("allowed_networks") {
                result.gorush.allowedNetworks = networks.compactMap { text in
                    guard let network = IPNetwork(text) else {
                        gorush.diagnostics.error(gorush.keyPath("allowed_networks"), "'\(text)' is not an IP address or a CIDR network")
                        return nil
                    }
                    return network
                }
            }
            if let file = gorush.readableFile("auth_token_file", required: false) {
                let token = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
                if token.isEmpty {
                    gorush.diagnostics.error(gorush.keyPath("auth_token_file"), "'\(file)' holds no token")
                } else {
                    result.gorush.authToken = token
                }
            }
            gorush.warnUnknownKeys()
        }
        config.warnUnknownKeys()
        return result
    }
}
