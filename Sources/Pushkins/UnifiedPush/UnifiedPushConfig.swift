package import HeraldCore
package import HeraldUpstream

/// The `type: unifiedpush` app keys (docs/compatibility/unifiedpush.md): the same endpoint policy,
/// timeouts and retries as Web Push, and no credentials (a UnifiedPush endpoint is a capability URL).
package struct UnifiedPushConfig: Sendable {
    package var allowedEndpoints: [String]?
    package var allowInsecureEndpoints: Bool
    package var allowPrivateEndpoints: Bool
    /// The largest body a distributor is sent; UnifiedPush guarantees 4096 bytes.
    package var maxMessageBytes: Int
    package var upstream: UpstreamSettings
    package var retry: RetryPolicy

    package static func read(_ config: ConfigSection, environment: PushkinEnvironment) -> UnifiedPushConfig? {
        let allowed = config.stringList("allowed_endpoints")
        EndpointPolicy.noteExplicitEntries(allowed, config: config)
        return UnifiedPushConfig(
            allowedEndpoints: allowed,
            allowInsecureEndpoints: config.bool("allow_insecure_endpoints", default: false),
            allowPrivateEndpoints: config.bool("allow_private_endpoints", default: false),
            maxMessageBytes: config.int("max_message_bytes", default: 4096, range: 1024...(64 * 1024)),
            upstream: UpstreamSettings.read(from: config, proxy: environment.proxy, multiplexed: true),
            retry: RetryPolicy.read(from: config))
    }
}
