import Crypto
import Logging

/// The `type: webpush` app keys: Sygnal's (docs/compatibility/webpush.md) plus Herald's limits and policies.
public struct WebPushConfig: Sendable {
    public var vapidKey: P256.Signing.PrivateKey
    public var contactEmail: String
    public var allowedEndpoints: [String]?
    public var ttl: Int
    public var allowInsecureEndpoints: Bool
    public var allowPrivateEndpoints: Bool
    public var upstream: UpstreamSettings
    public var retry: RetryPolicy

    /// Reads the app's keys; problems go to the reader's diagnostics and nil is returned.
    public static func read(_ config: ConfigSection, environment: PushkinEnvironment) -> WebPushConfig? {
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
