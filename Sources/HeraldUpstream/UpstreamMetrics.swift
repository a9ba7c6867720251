package import HeraldCore
package import Metrics
import Synchronization

/// Upstream request metrics under Sygnal's names (`sygnal_<type>_request_time`,
/// `sygnal_active_<type>_requests`, `sygnal_<type>_status_codes_total{pushkin,code}`), with the
/// handles made once rather than looked up per request.
package struct UpstreamMetrics: Sendable {
    /// The pushkin type (`apns`, `gcm`, `webpush`): part of the metric names.
    package let type: PushkinType
    let pushkin: String
    let factory: any MetricsFactory
    let requestTime: Metrics.Timer
    let active: Gauge
    /// `herald_upstream_resent_unanswered_total{pushkin}`: attempts made after one whose request may
    /// have reached the upstream without its answer reaching Herald (docs/operations.md, "When a
    /// push can arrive twice").
    let resentUnanswered: Counter
    /// `herald_upstream_credentials_refused_total{pushkin,after_renewal}`: credential values the
    /// upstream refused and Herald dropped; `after_renewal="true"` counts values made to replace a
    /// refused one and refused too, a configuration problem (docs/operations.md, "A refused
    /// credential").
    let credentialsRefused: Counter
    let credentialsRefusedAfterRenewal: Counter
    private let activeCount = AtomicCounter()
    /// What request times are measured on (docs/architecture.md, "Time").
    let clock: any HeraldClock
    private let statusCounters = StatusCounters()

    package init(type: PushkinType, pushkin: String, factory: any MetricsFactory, clock: any HeraldClock) {
        self.clock = clock
        self.type = type
        self.pushkin = pushkin
        self.factory = factory
        self.requestTime = Metrics.Timer(label: MetricName.requestTime(type), dimensions: [], factory: factory)
        self.active = Gauge(label: MetricName.activeRequests(type), dimensions: [], factory: factory)
        self.resentUnanswered = Counter(
            label: MetricName.upstreamResentUnanswered, dimensions: [("pushkin", pushkin)], factory: factory)
        self.credentialsRefused = Counter(
            label: MetricName.upstreamCredentialsRefused, dimensions: [("pushkin", pushkin), ("after_renewal", "false")],
            factory: factory)
        self.credentialsRefusedAfterRenewal = Counter(
            label: MetricName.upstreamCredentialsRefused, dimensions: [("pushkin", pushkin), ("after_renewal", "true")],
            factory: factory)
        // The status-code series exists from the start (at 0), so that dashboards see it.
        _ = statusCounters.counter(200) {
            Counter(label: MetricName.statusCodes(type), dimensions: [("pushkin", pushkin), ("code", "200")], factory: factory)
        }
    }

    /// Times one upstream request and counts its status (or `error` when none came back).
    func measure(_ body: () async throws -> UpstreamResponse) async throws -> UpstreamResponse {
        active.record(activeCount.add(1))
        let start = clock.now
        defer {
            requestTime.recordNanoseconds((clock.now - start).nanoseconds)
            active.record(activeCount.add(-1))
        }
        do {
            let result = try await body()
            countStatus(result.status)
            return result
        } catch {
            countStatus(nil)
            throw error
        }
    }

    /// Counts a credential value the upstream refused and Herald dropped.
    func countRefusal(_ refusal: CredentialRefusal) {
        switch refusal {
        case .alreadyReplaced: break
        case .dropped: credentialsRefused.increment()
        case .droppedAfterRenewal: credentialsRefusedAfterRenewal.increment()
        }
    }

    /// Counts a status code, or `error` (nil) when no response came back.
    func countStatus(_ status: Int?) {
        statusCounters.counter(status ?? -1) {
            Counter(
                label: MetricName.statusCodes(type),
                dimensions: [("pushkin", pushkin), ("code", status.map(String.init) ?? "error")],
                factory: factory)
        }
        .increment()
    }
}

/// Counter handles by status code (-1: no response), made on first use.
private final class StatusCounters: Sendable {
    private let counters = Mutex<[Int: Counter]>([:])

    func counter(_ code: Int, make: () -> Counter) -> Counter {
        counters.withLock { table in
            if let existing = table[code] { return existing }
            let made = make()
            table[code] = made
            return made
        }
    }
}
