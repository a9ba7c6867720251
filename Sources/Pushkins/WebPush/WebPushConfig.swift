package import Crypto
package import HeraldCore
package import HeraldUpstream

/// The `type: webpush` app keys: Sygnal's (docs/compatibility/webpush.md) plus Herald's limits and policies.
package struct WebPushConfig: Sendable {
    package var vapidKey: P256.Signing.PrivateKey
    package var contactEmail: String
    package var allowedEndpoints: [String]?
    package var ttl: Int
    package var allowInsecureEndpoints: Bool
    package var allowPrivateEndpoints: Bool
    package var upstream: UpstreamSettings
    package var retry: RetryPolicy
    /// Declarative Web Push (`declarative: true`): the message carries `web_push: 8030` and a
    /// `notification` a browser shows without a service worker; `navigate` is
    /// `declarative_navigate` with the room (docs/compatibility/webpush.md, "Declarative Web Push").
    package var declarativeNavigate: String?
    /// `declarative_badge_updates`: a notify with no event and no room is sent to a declarative
    /// app as a silent declarative message (`declarative_title`, `declarative_start_url`) rather
    /// than not at all (docs/compatibility/webpush.md, "Declarative Web Push").
    package var declarativeBadgeUpdates = false
    package var declarativeTitle = "New message"
    package var declarativeStartURL: String?

    /// Reads the app's keys; problems go to the reader's diagnostics and nil is returned.
    package static func read(_ config: ConfigSection, environment: PushkinEnvironment) -> WebPushConfig? {
        let keyPath = config.string("vapid_private_key", required: true)
        let createKey = config.bool("create_vapid_key_if_missing", default: false)
        let email = config.string("vapid_contact_email", required: true)
        let allowed = config.stringList("allowed_endpoints")
        EndpointPolicy.noteExplicitEntries(allowed, config: config)
        let ttl = config.int("ttl", default: 900, range: 0...2_419_200)
        let insecure = config.bool("allow_insecure_endpoints", default: false)
        let privateEndpoints = config.bool("allow_private_endpoints", default: false)
        let upstream = UpstreamSettings.read(from: config, proxy: environment.proxy, multiplexed: true)
        let retry = RetryPolicy.read(from: config)
        let declarative = config.bool("declarative", default: false)
        let navigate = config.string("declarative_navigate")
        if declarative && (navigate ?? "").isEmpty {
            config.diagnostics.error(
                config.keyPath("declarative_navigate"),
                "required with declarative: true: the https URL a click opens, with {room_id} where the room goes")
        }
        let badgeUpdates = config.bool("declarative_badge_updates", default: false)
        let title = config.string("declarative_title") ?? "New message"
        let startURL = config.string("declarative_start_url") ?? navigate.flatMap(WebPushPayload.origin)
        if declarative, let startURL, !startURL.hasPrefix("https://") {
            config.diagnostics.error(config.keyPath("declarative_start_url"), "must be an https URL, got '\(startURL)'")
        }
        if let email, let problem = VAPIDSubject.problem(email) {
            config.diagnostics.error(
                config.keyPath("vapid_contact_email"),
                "'\(email)' \(problem): Apple's push service refuses such a VAPID subject (403 BadJwtToken); use an address at a public domain"
            )
        }
        guard let keyPath, !keyPath.isEmpty, let email else { return nil }
        let key: P256.Signing.PrivateKey
        do {
            key = try VAPIDKey.load(path: keyPath, createIfMissing: createKey, readOnly: environment.readOnly, logger: environment.logger)
        } catch {
            config.diagnostics.error(config.keyPath("vapid_private_key"), error.description)
            return nil
        }
        return WebPushConfig(
            vapidKey: key, contactEmail: email, allowedEndpoints: allowed, ttl: ttl, allowInsecureEndpoints: insecure,
            allowPrivateEndpoints: privateEndpoints, upstream: upstream, retry: retry,
            declarativeNavigate: declarative ? navigate : nil, declarativeBadgeUpdates: badgeUpdates, declarativeTitle: title,
            declarativeStartURL: startURL)
    }
}
