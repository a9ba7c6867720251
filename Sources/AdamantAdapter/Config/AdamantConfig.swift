import Foundation
package import HeraldCore
import HeraldSQLite
package import HeraldUpstream
import Pushkins

/// The `adamant:` section (docs/adamant.md, "Configuration").
package struct AdamantConfig: Sendable {
    package enum Startup: Sendable, Equatable {
        /// The stored cursors; where there are none, the chain's current height.
        case database
        /// The chain's current height: nothing older is pushed.
        case network
        /// An explicit height (replays everything after it).
        case initial(height: Int64)
    }

    package enum Store: Sendable, Equatable {
        case sqlite(path: String)
        case postgres(url: String)
    }

    /// What a push says for one kind of transaction: localisation keys the app resolves, a sound.
    package struct Payload: Sendable, Equatable {
        package var locKey: String
        package var titleLocKey: String?
        package var sound: String?
    }

    package var enabled = true
    package var nodes: [String] = []
    /// The service account's keys, from `passphrase_file` or `private_key_file`.
    package var keys: AdamantKeys?
    package var apnsApp = ""
    package var apnsSandboxApp: String?
    package var developmentBaseURL = APNsHosts.development
    package var topic: String?
    package var pollInterval: Duration = .seconds(3)
    package var signalPollInterval: Duration = .seconds(10)
    package var maxBackoff: Duration = .seconds(60)
    package var startup = Startup.database
    package var store = Store.sqlite(path: "./data/adamant.sqlite")
    /// The page cache of each SQLite connection, in KiB.
    package var sqliteCacheKiB = DurableSQLite.defaultCacheKiB
    package var chatPayload = Payload(locKey: "NotificationsService.NewMessage.BodySingle", titleLocKey: nil, sound: "notification.mp3")
    package var transferPayload = Payload(
        locKey: "NotificationsService.NewTransfer.BodySingle", titleLocKey: nil, sound: "notification.mp3")
    package var recentPushes = 100_000
    package var leaseRetry: Duration = .seconds(2)
    /// How often the lease holder proves its lock's connection alive (PostgreSQL).
    package var leaseCheck: Duration = .seconds(1)
    /// How long a PostgreSQL store operation may wait for the database (`store_timeout`).
    package var storeTimeout: Duration = .seconds(5)
    /// The PostgreSQL store's connections at most, per instance (`store_max_connections`): one holds
    /// the polling lease, the others serve the pollers.
    package var storeMaxConnections = 8
    /// Polls a batch with temporary APNs failures is tried again before its failed pushes are given up.
    package var maxBatchAttempts = 5
    package var maxConcurrentPushes = 64
    /// Towards the nodes. A page of 100 chat transactions is about 70 KB: answers up to 16 MiB are read.
    package var node = UpstreamSettings(
        maxConnections: 8, connectTimeout: .seconds(5), requestTimeout: .seconds(10), maxResponseBytes: 16 << 20)

    package init() {}

    package static func read(_ section: ConfigSection, proxy: ProxySettings?) -> AdamantConfig {
        var config = AdamantConfig()
        let diagnostics = section.diagnostics
        config.enabled = section.bool("enabled", default: true)
        config.nodes = (section.stringList("nodes") ?? []).filter { !$0.isEmpty }
        if config.nodes.isEmpty { diagnostics.error(section.keyPath("nodes"), "name at least one ADAMANT node URL") }
        for node in config.nodes where !(node.hasPrefix("https://") || node.hasPrefix("http://")) {
            diagnostics.error(section.keyPath("nodes"), "'\(node)' is not an http(s) URL")
        }
        config.keys = readKeys(section)
        config.apnsApp = section.string("apns_app", required: true) ?? ""
        config.apnsSandboxApp = section.string("apns_sandbox_app").flatMap { $0.isEmpty ? nil : $0 }
        if let url = section.string("development_base_url"), !url.isEmpty {
            config.developmentBaseURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        config.topic = section.string("topic").flatMap { $0.isEmpty ? nil : $0 }
        config.pollInterval = section.seconds("poll_interval", default: 3, range: 0.05...3600)
        config.signalPollInterval = section.seconds("signal_poll_interval", default: 10, range: 0.05...3600)
        config.maxBackoff = section.seconds("max_backoff", default: 60, range: 0.1...3600)
        config.leaseRetry = section.seconds("lease_retry", default: 2, range: 0.05...600)
        config.leaseCheck = section.seconds("lease_check", default: 1, range: 0.05...60)
        config.storeTimeout = section.seconds("store_timeout", default: 5, range: 0.05...300)
        config.storeMaxConnections = section.int("store_max_connections", default: 8, range: 2...1000)
        config.recentPushes = section.int("recent_pushes", default: 100_000, range: 100...10_000_000)
        config.maxBatchAttempts = section.int("max_batch_attempts", default: 5, range: 1...1000)
        config.maxConcurrentPushes = section.int("max_concurrent_pushes", default: 64, range: 1...10_000)
        readStartupAndStore(section, into: &config)
        config.sqliteCacheKiB = section.int("sqlite_cache_kib", default: DurableSQLite.defaultCacheKiB, range: 16...1_048_576)
        readPayloads(section, into: &config)
        config.node = UpstreamSettings.read(from: section, proxy: proxy, defaults: config.node)
        section.warnUnknownKeys()
        return config
    }

    /// The service account's keys, from a passphrase or a private key file (exactly one), and
    /// checked against `address` when it is given.
    static func readKeys(_ section: ConfigSection) -> AdamantKeys? {
        let diagnostics = section.diagnostics
        var keys: AdamantKeys?
        let passphraseFile = section.readableFile("passphrase_file", required: false)
        let keyFile = section.readableFile("private_key_file", required: false)
        switch (passphraseFile, keyFile) {
        case (nil, nil):
            if !section.has("passphrase_file") && !section.has("private_key_file") {
                diagnostics.error(section.keyPath("passphrase_file"), "set passphrase_file or private_key_file (the service account)")
            }
        case (.some, .some):
            diagnostics.error(section.keyPath("private_key_file"), "set only one of passphrase_file and private_key_file")
        case (let path?, nil):
            do {
                keys = try AdamantKeys(passphrase: try String(contentsOfFile: path, encoding: .utf8))
            } catch {
                diagnostics.error(section.keyPath("passphrase_file"), "cannot make keys from it: \(error)")
            }
        case (nil, let path?):
            do {
                keys = try AdamantKeys(privateKeyHex: try String(contentsOfFile: path, encoding: .utf8))
            } catch {
                diagnostics.error(section.keyPath("private_key_file"), "\(error)")
            }
        }
        if let address = section.string("address"), let keys, keys.address != address {
            diagnostics.error(section.keyPath("address"), "the keys are those of \(keys.address), not \(address)")
        }
        return keys
    }

    /// `startup` (and `start_height`) and `store`.
    static func readStartupAndStore(_ section: ConfigSection, into config: inout AdamantConfig) {
        let diagnostics = section.diagnostics
        switch section.string("startup") ?? "database" {
        case "database": config.startup = .database
        case "network": config.startup = .network
        case "initial":
            if section.has("start_height") {
                config.startup = .initial(height: Int64(section.int("start_height", default: 0, range: 0...Int(Int32.max))))
            } else {
                diagnostics.error(section.keyPath("start_height"), "startup: initial needs an explicit start_height")
            }
        case let other:
            diagnostics.error(section.keyPath("startup"), "must be database, network or initial, got '\(other)'")
        }
        if let store = section.string("store"), !store.isEmpty {
            if store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") {
                config.store = .postgres(url: store)
            } else if store.contains("://") {
                diagnostics.error(section.keyPath("store"), "must be a file path or a postgres:// URL")
            } else {
                config.store = .sqlite(path: store.hasPrefix("sqlite:") ? String(store.dropFirst(7)) : store)
            }
        }
    }

    /// `payloads.chat` and `payloads.transfer`, each over its default.
    static func readPayloads(_ section: ConfigSection, into config: inout AdamantConfig) {
        if let payloads = section.map("payloads") {
            for (key, defaultPayload) in [("chat", config.chatPayload), ("transfer", config.transferPayload)] {
                guard let entry = payloads.map(key) else { continue }
                let payload = Payload(
                    locKey: entry.string("loc_key") ?? defaultPayload.locKey, titleLocKey: entry.string("title_loc_key"),
                    sound: entry.has("sound") ? entry.string("sound") : defaultPayload.sound)
                if key == "chat" { config.chatPayload = payload } else { config.transferPayload = payload }
                entry.warnUnknownKeys()
            }
            payloads.warnUnknownKeys()
        }
    }
}
