import Metrics
import Prometheus
import Pushkins

/// The gateway's own metrics, under Sygnal's names (sygnal.md §6) where they apply, plus
/// Herald's per-app outcome counters. Each gateway has its own registry (no global state).
public final class GatewayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let factory: PrometheusMetricsFactory
    let notificationsReceived: Metrics.Counter
    let devicesReceived: Metrics.Counter
    let requestsInFlight: Metrics.Gauge
    let inFlightCount = AtomicCounter()

    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(75), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .milliseconds(750), .seconds(1), .milliseconds(2500), .seconds(5),
            .milliseconds(7500), .seconds(10),
        ]
        self.registry = registry
        self.factory = factory
        notificationsReceived = Metrics.Counter(label: "sygnal_notifications_received_total", dimensions: [], factory: factory)
        devicesReceived = Metrics.Counter(label: "sygnal_notifications_devices_received_total", dimensions: [], factory: factory)
        requestsInFlight = Metrics.Gauge(
            label: "sygnal_requests_in_flight", dimensions: [("resource", "V1NotifyHandler")], factory: factory)
    }

    func notifyFinished(code: Int, seconds: Double) {
        Metrics.Counter(label: "sygnal_pushgateway_status_codes_total", dimensions: [("code", String(code))], factory: factory).increment()
        Metrics.Timer(label: "sygnal_notify_time", dimensions: [("code", String(code))], factory: factory)
            .recordNanoseconds(Int64(seconds * 1e9))
    }

    func dispatched(pushkin: String) {
        Metrics.Counter(label: "sygnal_per_pushkin_type_total", dimensions: [("pushkin", pushkin)], factory: factory).increment()
    }

    func inflightDrop(pushkin: String) {
        Metrics.Counter(label: "sygnal_inflight_request_limit_drop_total", dimensions: [("pushkin", pushkin)], factory: factory).increment()
    }

    /// Creates the per-app series at 0 so dashboards see them before the first event.
    func prepare(pushkin: String) {
        _ = Metrics.Counter(label: "sygnal_inflight_request_limit_drop_total", dimensions: [("pushkin", pushkin)], factory: factory)
        _ = Metrics.Counter(label: "herald_rejected_pushkeys_total", dimensions: [("pushkin", pushkin)], factory: factory)
        _ = Metrics.Counter(label: "herald_failed_devices_total", dimensions: [("pushkin", pushkin)], factory: factory)
    }

    /// Counts one device outcome: `herald_device_outcomes_total{pushkin,outcome}`, and the
    /// rejected and failed counters operators alert on.
    public func outcome(_ outcome: String, pushkin: String) {
        Metrics.Counter(label: "herald_device_outcomes_total", dimensions: [("pushkin", pushkin), ("outcome", outcome)], factory: factory)
            .increment()
        switch outcome {
        case "rejected":
            Metrics.Counter(label: "herald_rejected_pushkeys_total", dimensions: [("pushkin", pushkin)], factory: factory).increment()
        case "failed":
            Metrics.Counter(label: "herald_failed_devices_total", dimensions: [("pushkin", pushkin)], factory: factory).increment()
        default: break
        }
    }

    /// The Prometheus text exposition of everything, plus process metrics.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        ProcessMetrics.emit(into: &buffer)
        return buffer
    }
}
