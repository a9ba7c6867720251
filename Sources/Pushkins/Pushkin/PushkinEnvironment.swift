import Logging
import Metrics

/// What every pushkin is built with: a logger, the metrics factory of the gateway that owns it,
/// and the process-wide proxy.
public struct PushkinEnvironment: Sendable {
    public var logger: Logger
    public var metrics: any MetricsFactory
    public var proxy: ProxySettings?
    /// Validation only (`herald check-config`): create no files.
    public var readOnly: Bool

    public init(logger: Logger, metrics: any MetricsFactory, proxy: ProxySettings? = nil, readOnly: Bool = false) {
        self.logger = logger
        self.metrics = metrics
        self.proxy = proxy
        self.readOnly = readOnly
    }
}

/// Upstream request metrics under Sygnal's names (`sygnal_<kind>_request_time`,
/// `sygnal_active_<kind>_requests`, `sygnal_<kind>_status_codes_total`).
public struct UpstreamMetrics: Sendable {
    let factory: any MetricsFactory
    let pushkin: String
    let kind: String
    let requestTime: Metrics.Timer
    let active: Gauge
    private let activeCount = AtomicCounter()

    public init(kind: String, pushkin: String, factory: any MetricsFactory) {
        self.factory = factory
        self.pushkin = pushkin
        self.kind = kind
        self.requestTime = Metrics.Timer(label: "sygnal_\(kind)_request_time", dimensions: [], factory: factory)
        self.active = Gauge(label: "sygnal_active_\(kind)_requests", dimensions: [], factory: factory)
    }

    /// Times one upstream request and counts its status (or `error` when none came back).
    public func measure<T>(_ body: () async throws -> T, status: (T) -> Int) async throws -> T {
        active.record(activeCount.add(1))
        let start = ContinuousClock.now
        defer {
            requestTime.recordNanoseconds(Int64((ContinuousClock.now - start).seconds * 1e9))
            active.record(activeCount.add(-1))
        }
        do {
            let result = try await body()
            countStatus(String(status(result)))
            return result
        } catch {
            countStatus("error")
            throw error
        }
    }

    public func countStatus(_ code: String) {
        Counter(label: "sygnal_\(kind)_status_codes_total", dimensions: [("pushkin", pushkin), ("code", code)], factory: factory)
            .increment()
    }
}
