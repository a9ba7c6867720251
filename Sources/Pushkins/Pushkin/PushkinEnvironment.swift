import Logging
import Metrics

/// What every pushkin is built with: a logger, the metrics factory of the gateway that owns it,
/// the process-wide proxy, and how host names are resolved for endpoint checks.
public struct PushkinEnvironment: Sendable {
    public var logger: Logger
    public var metrics: any MetricsFactory
    public var proxy: ProxySettings?
    /// Validation only (`herald check-config`): create no files.
    public var readOnly: Bool
    public var hostResolver: HostResolver

    public init(
        logger: Logger, metrics: any MetricsFactory, proxy: ProxySettings? = nil, readOnly: Bool = false,
        hostResolver: HostResolver = .system
    ) {
        self.logger = logger
        self.metrics = metrics
        self.proxy = proxy
        self.readOnly = readOnly
        self.hostResolver = hostResolver
    }
}
