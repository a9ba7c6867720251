package import Crypto
import FoundationEssentials
package import HeraldCore
package import HeraldUpstream

/// The `type: apns` app keys: Sygnal's (docs/compatibility/apns.md, "Configuration") plus connection and retry limits.
package struct APNsConfig: Sendable {
    package enum Auth: Sendable {
        /// Token authentication: a `.p8` key signs ES256 provider tokens.
        case token(key: P256.Signing.PrivateKey, keyId: String, teamId: String)
        /// Certificate authentication: a PEM file with the certificate and its key.
        case certificate(path: String, identity: APNsCertificate)
    }

    package var auth: Auth
    package var topic: String
    package var baseURL: String
    package var pushType: String?
    /// `priority`: the `apns-priority` of every push, when set (else 10, or 5 for `prio: low`,
    /// within what the push type allows).
    package var priority: Int?
    package var convertDeviceTokenToHex: Bool
    package var sendBadgeCounts: Bool
    /// Seconds Apple keeps an undeliverable notification (`apns-expiration` = now + this; 0 = once).
    package var expiration: Int
    package var connections: Int
    /// The connections' settings; its `maxConcurrentStreams` is the streams in flight per
    /// connection (APNs allows 1000; the server's own limit also applies).
    package var upstream: UpstreamSettings
    package var retry: RetryPolicy

    package static var pushTypes: Set<String> { Set(APNsPushType.all.keys) }

    /// The topic sent for a push of `type` (the app's, with the type's suffix).
    package func topic(for type: String?) -> String { type.flatMap(APNsPushType.named)?.topic(topic) ?? topic }

    package static func read(_ config: ConfigSection, environment: PushkinEnvironment) -> APNsConfig? {
        let diagnostics = config.diagnostics
        let platform = config.string("platform") ?? "production"
        var baseURL: String
        switch platform {
        case "production", "prod": baseURL = APNsHosts.production
        case "sandbox": baseURL = APNsHosts.development
        default:
            diagnostics.error(config.keyPath("platform"), "must be production or sandbox, got '\(platform)'")
            baseURL = APNsHosts.production
        }
        if let override = config.string("base_url"), !override.isEmpty {
            baseURL = override.hasSuffix("/") ? String(override.dropLast()) : override
        }
        let certfile = config.readableFile("certfile", required: false)
        let keyfile = config.readableFile("keyfile", required: false)
        let keyId = config.string("key_id")
        let teamId = config.string("team_id")
        var topic = config.string("topic")
        let pushType = config.string("push_type")
        if let pushType, !pushTypes.contains(pushType) {
            diagnostics.error(
                config.keyPath("push_type"), "must be one of \(pushTypes.sorted().joined(separator: ", ")), got '\(pushType)'")
        }
        let priority = config.has("priority") ? config.int("priority", default: 10, range: 5...10) : nil
        if let priority, priority != 5 && priority != 10 {
            diagnostics.error(config.keyPath("priority"), "must be 5 or 10, got \(priority)")
        }
        let hex = config.bool("convert_device_token_to_hex", default: true)
        let badges = config.bool("send_badge_counts", default: true)
        let expiration = config.int("expiration", default: 86_400, range: 0...2_592_000)
        let connections = config.int("max_connections", default: 2, range: 1...100)
        var defaults = UpstreamSettings()
        defaults.maxConnections = 1
        var upstream = UpstreamSettings.read(from: config, proxy: environment.proxy, defaults: defaults)
        upstream.maxConnections = 1  // one HTTP/2 connection per pooled client
        // The pool's one value: the slots of its queue and each connection's streams.
        upstream.maxConcurrentStreams = config.int("max_concurrent_streams", default: 500, range: 1...1000)
        let retry = RetryPolicy.read(from: config, pushback: false)

        let auth: Auth
        if let certfile {
            // As in Sygnal, the certificate wins when both are set.
            do {
                let identity = try APNsCertificate.load(path: certfile)
                auth = .certificate(path: certfile, identity: identity)
                if topic == nil || topic?.isEmpty == true { topic = identity.topic }
            } catch {
                diagnostics.error(config.keyPath("certfile"), "\(error)")
                return nil
            }
        } else if let keyfile {
            for (key, value) in [("key_id", keyId), ("team_id", teamId), ("topic", topic)] where value?.isEmpty ?? true {
                diagnostics.error(config.keyPath(key), "required with keyfile (token authentication)")
            }
            guard let keyId, let teamId, !keyId.isEmpty, !teamId.isEmpty else { return nil }
            do {
                let pem = try FileAccess.readString(keyfile)
                auth = .token(key: try P256.Signing.PrivateKey(pemRepresentation: pem), keyId: keyId, teamId: teamId)
            } catch {
                diagnostics.error(config.keyPath("keyfile"), "'\(keyfile)' is not a P-256 .p8 key")
                return nil
            }
        } else {
            if !config.has("certfile") && !config.has("keyfile") {
                diagnostics.error(config.keyPath("keyfile"), "either certfile or keyfile (with key_id, team_id, topic) is required")
            }
            return nil
        }
        guard let topic, !topic.isEmpty else {
            diagnostics.error(config.keyPath("topic"), "required: the certificate has no UID to take the topic from")
            return nil
        }
        if let type = pushType.flatMap(APNsPushType.named) {
            if let priority, !type.priorities.contains(priority) {
                diagnostics.error(
                    config.keyPath("priority"),
                    "Apple accepts push_type \(type.name) only with priority \(type.priorities.sorted().map(String.init).joined(separator: " or ")), got \(priority)"
                )
            }
            if let other = type.contradictingSuffix(of: topic) {
                diagnostics.error(
                    config.keyPath("topic"),
                    "'\(topic)' is a topic for another push type (it ends with \(other)); push_type \(type.name) needs the bundle id, to which Herald adds \(type.topicSuffix ?? "")"
                )
            }
        }
        return APNsConfig(
            auth: auth, topic: topic, baseURL: baseURL, pushType: pushType, priority: priority, convertDeviceTokenToHex: hex,
            sendBadgeCounts: badges, expiration: expiration, connections: connections, upstream: upstream,
            retry: retry)
    }
}
