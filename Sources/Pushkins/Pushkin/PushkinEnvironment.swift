package import HeraldCore
package import HeraldUpstream
package import Logging
package import Metrics

/// What every pushkin is built with: a logger, the metrics factory of the gateway that owns it,
/// the process-wide proxy, how host names are resolved for endpoint checks, and the TLS contexts
/// the gateway's pushkins share.
package struct PushkinEnvironment: Sendable {
    package var logger: Logger
    package var metrics: any MetricsFactory
    package var proxy: ProxySettings?
    /// Validation only (`herald check-config`): create no files.
    package var readOnly: Bool
    package var hostResolver: HostResolver
    package var tlsContexts: TLSContexts
    /// What retries wait on (docs/architecture.md, "Time").
    package var clock: any HeraldClock
    /// The gateway's pushback holds per upstream origin (docs/operations.md, "Pushback"); nil:
    /// every call honours `Retry-After` by itself.
    package var holds: UpstreamHolds?

    package init(
        logger: Logger, metrics: any MetricsFactory, proxy: ProxySettings? = nil, readOnly: Bool = false,
        hostResolver: HostResolver = .system, tlsContexts: TLSContexts = TLSContexts(), clock: any HeraldClock,
        holds: UpstreamHolds? = nil
    ) {
        self.clock = clock
        self.holds = holds
        self.tlsContexts = tlsContexts
        self.logger = logger
        self.metrics = metrics
        self.proxy = proxy
        self.readOnly = readOnly
        self.hostResolver = hostResolver
    }
}
