package import Crypto
package import HeraldCore
package import HeraldUpstream

/// The `type: unifiedpush` app keys (docs/compatibility/unifiedpush.md): the same endpoint policy,
/// timeouts and retries as Web Push, the headers every Web Push sender owes a push service (`TTL`,
/// `Urgency`), and the VAPID key that signs the pushes of pushers that gave their subscription's
/// keys (an endpoint is a capability URL: without keys, no credentials are needed).
package struct UnifiedPushConfig: Sendable {
    package var allowedEndpoints: [String]?
    package var allowInsecureEndpoints: Bool
    package var allowPrivateEndpoints: Bool
    /// The largest body a distributor is sent; UnifiedPush guarantees 4096 bytes.
    package var maxMessageBytes: Int
    /// `TTL` (RFC 8030 §5.2: required of every sender; Mozilla's service refuses a push without it).
    package var ttl: Int
    /// `vapid_private_key` and `vapid_contact_email`: the `Authorization` of encrypted pushes; nil
    /// when the app has none (encrypted pushes then go without it).
    package var vapid: (key: P256.Signing.PrivateKey, contactEmail: String)?
    package var upstream: UpstreamSettings
    package var retry: RetryPolicy

    package static func read(_ config: ConfigSection, environment: PushkinEnvironment) -> UnifiedPushConfig? {
        let allowed = config.stringList("allowed_endpoints")
        EndpointPolicy.noteExplicitEntries(allowed, config: config)
        let keyPath = config.string("vapid_private_key")
        let createKey = config.bool("create_vapid_key_if_missing", default: true)
        let email = config.string("vapid_contact_email")
        var vapid: (P256.Signing.PrivateKey, String)?
        if let keyPath, !keyPath.isEmpty {
            if email?.isEmpty ?? true {
                config.diagnostics.error(
                    config.keyPath("vapid_contact_email"), "required with vapid_private_key: the contact a push service may write to")
            } else if let email, let problem = VAPIDSubject.problem(email) {
                config.diagnostics.error(config.keyPath("vapid_contact_email"), "'\(email)' \(problem)")
            }
            do {
                let key = try VAPIDKey.load(
                    path: keyPath, createIfMissing: createKey, readOnly: environment.readOnly, logger: environment.logger)
                if let email, !email.isEmpty { vapid = (key, email) }
            } catch {
                config.diagnostics.error(config.keyPath("vapid_private_key"), error.description)
            }
        } else if email != nil {
            config.diagnostics.warning(config.keyPath("vapid_contact_email"), "set without vapid_private_key: not used")
        }
        return UnifiedPushConfig(
            allowedEndpoints: allowed,
            allowInsecureEndpoints: config.bool("allow_insecure_endpoints", default: false),
            allowPrivateEndpoints: config.bool("allow_private_endpoints", default: false),
            maxMessageBytes: config.int("max_message_bytes", default: 4096, range: 1024...(64 * 1024)),
            ttl: config.int("ttl", default: 86_400, range: 0...2_419_200),
            vapid: vapid,
            upstream: UpstreamSettings.read(from: config, proxy: environment.proxy, multiplexed: true),
            retry: RetryPolicy.read(from: config))
    }
}
