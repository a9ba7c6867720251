import Logging
import Metrics

/// What every pushkin is built with: a logger, the metrics factory of the gateway that owns it,
/// the process-wide proxy, how host names are resolved for endpoint checks, and the TLS contexts
/// the gateway's pushkins share.
public struct PushkinEnvironment: Sendable {
    public var logger: Logger
    public var metrics: any MetricsFactory
    public var proxy: ProxySettings?
    /// Validation only (`herald check-config`): create no files.
    public var readOnly: Bool
    public var hostResolver: HostResolver
    public var tlsContexts: TLSContexts

    public init(
        logger: Logger, metrics: any MetricsFactory, proxy: ProxySettings? = nil, readOnly: Bool = false,
        hostResolver: HostResolver = .system, tlsContexts: TLSContexts = TLSContexts()
    ) {
        self.tlsContexts = tlsContexts
        self.logger = logger
        self.metrics = metrics
        self.proxy = proxy
        self.readOnly = readOnly
        self.hostResolver = hostResolver
    }
}
