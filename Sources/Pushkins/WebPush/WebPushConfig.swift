import Crypto
import HeraldCore
import HeraldUpstream
import Logging

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
        let upstream = UpstreamSettings.read(from: config, proxy: environment.proxy)
        let retry = RetryPolicy.read(from: config)
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
            allowPrivateEndpoints: privateEndpoints, upstream: upstream, retry: retry)
    }
}
