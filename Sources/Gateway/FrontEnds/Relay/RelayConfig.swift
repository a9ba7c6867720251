import HeraldCore
import Pushkins

/// The `relay:` section: the Web Push → APNs relay (docs/webpush-relay.md, "Configuration").
struct RelayConfig: Sendable {
    var enabled = true
    /// The `type: apns` app whose credentials the relay uses (a token key, or a production
    /// certificate, serves both environments).
    var apnsApp = ""
    /// `apns-topic` of relayed messages: the iOS app that decrypts them. Default: the app's topic.
    var topic: String?
    var productionBaseURL = APNsHosts.production
    var developmentBaseURL = APNsHosts.development
    /// Request bodies above this are refused with 413 before they are read.
    var maxBodyBytes = 4096
    /// Messages a minute per device token (0: no limit), and the burst allowed.
    var rateLimitPerMinute = 120
    var rateLimitBurst = 60
    /// Seconds a sender is told to wait (`Retry-After`) when rate limited or APNs is unavailable.
    var retryAfter = 30
    /// A listener of its own (toot-relay's users point at :42069), on these addresses.
    var port: Int?
    var bindAddresses: [String]?

    static func read(_ section: ConfigSection) -> RelayConfig {
        var config = RelayConfig()
        config.enabled = section.bool("enabled", default: true)
        config.apnsApp = section.string("apns_app", required: true) ?? ""
        config.topic = section.string("topic").flatMap { $0.isEmpty ? nil : $0 }
        config.productionBaseURL = trimmed(section.string("production_base_url")) ?? APNsHosts.production
        config.developmentBaseURL = trimmed(section.string("development_base_url")) ?? APNsHosts.development
        config.maxBodyBytes = section.int("max_body_bytes", default: 4096, range: 1024...65536)
        config.rateLimitPerMinute = section.int("rate_limit_per_minute", default: 120, range: 0...1_000_000)
        config.rateLimitBurst = section.int("rate_limit_burst", default: 60, range: 1...1_000_000)
        config.retryAfter = section.int("retry_after", default: 30, range: 1...3600)
        if section.has("port") { config.port = section.int("port", default: 42069, range: 0...65535) }
        config.bindAddresses = section.stringList("bind_addresses")
        section.warnUnknownKeys()
        return config
    }

    private static func trimmed(_ url: String?) -> String? {
        guard let url, !url.isEmpty else { return nil }
        return url.hasSuffix("/") ? String(url.dropLast()) : url
    }
}
