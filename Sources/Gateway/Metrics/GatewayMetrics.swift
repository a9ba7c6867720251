package import HeraldCore
import Metrics
package import Prometheus
import Synchronization

/// The gateway's own metrics, under Sygnal's names (docs/compatibility/matrix.md, "Metrics") where
/// they apply, plus Herald's own (the per-app outcome counters are the dispatcher's). Each gateway has its own registry (no global
/// state). Handles are made once and kept, not looked up per event.
package final class GatewayMetrics: Sendable {
    package let registry: PrometheusCollectorRegistry
    package let factory: PrometheusMetricsFactory
    let notificationsReceived: Metrics.Counter
    let devicesReceived: Metrics.Counter
    let requestsInFlight: Metrics.Gauge
    let inFlightCount = AtomicCounter()
    package let counters: CounterCache
    /// `sygnal_pushgateway_status_codes_total` and `sygnal_notify_time` by status code.
    private let codes = Mutex<[Int: (count: Metrics.Counter, time: Metrics.Timer)]>([:])

    package init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(75), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .milliseconds(750), .seconds(1), .milliseconds(2500), .seconds(5),
            .milliseconds(7500), .seconds(10),
        ]
        self.registry = registry
        self.factory = factory
        self.counters = CounterCache(factory: factory)
        notificationsReceived = Metrics.Counter(label: MetricName.notificationsReceived, dimensions: [], factory: factory)
        devicesReceived = Metrics.Counter(label: MetricName.notificationsDevicesReceived, dimensions: [], factory: factory)
        requestsInFlight = Metrics.Gauge(
            label: MetricName.requestsInFlight, dimensions: [("resource", "V1NotifyHandler")], factory: factory)
        Metrics.Gauge(
            label: MetricName.buildInfo, dimensions: [("version", HeraldVersion.string), ("commit", HeraldVersion.commit)], factory: factory
        )
        .record(1)
    }

    /// The counter `label{dimensions}`, made on first use.
    func counter(_ label: String, _ dimensions: [(String, String)]) -> Metrics.Counter { counters.counter(label, dimensions) }

    func notifyFinished(code: Int, duration: Duration) {
        let series = codes.withLock { table in
            if let existing = table[code] { return existing }
            let made = (
                count: counter(MetricName.pushgatewayStatusCodes, [("code", String(code))]),
                time: Metrics.Timer(label: MetricName.notifyTime, dimensions: [("code", String(code))], factory: factory)
            )
            table[code] = made
            return made
        }
        series.count.increment()
        series.time.recordNanoseconds(duration.nanoseconds)
    }

    /// The Prometheus text exposition of everything, plus process metrics.
    package func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        ProcessMetrics.emit(into: &buffer)
        return buffer
    }
}
