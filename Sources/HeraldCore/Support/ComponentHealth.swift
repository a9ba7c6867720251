package import FoundationEssentials
package import Metrics
import Synchronization

/// Whether a dependency an instance keeps serving without (a front end's database) answers, as the
/// outcome of its latest use: `/health` lists the failing ones (docs/operations.md, "Health"). It
/// is a report, not a probe: nothing asks the dependency for it, so a load balancer's checks cost
/// the database nothing, and a failing store does not take the instance out (the Matrix API and the
/// relay need no database).
package final class ComponentHealth: Sendable {
    /// The component's name in `/health` and in `herald_component_up{component}`.
    package let name: String
    private let state = Mutex(State())
    /// `herald_component_failing{component}`: 1 while it fails, else 0.
    private let gauge: Gauge?
    /// When a failure began (docs/architecture.md, "Time").
    let clock: any HeraldClock

    struct State {
        var failingSince: Date?
        var lastError = ""
    }

    package init(name: String, metrics: (any MetricsFactory)? = nil, clock: any HeraldClock) {
        self.name = name
        self.clock = clock
        gauge = metrics.map { Gauge(label: MetricName.componentFailing, dimensions: [("component", name)], factory: $0) }
        gauge?.record(0)
    }

    /// Its latest use succeeded.
    package func succeeded() {
        let was = state.withLock { state -> Bool in
            defer { state.failingSince = nil }
            return state.failingSince != nil
        }
        if was { gauge?.record(0) }
    }

    /// Its latest use failed with `error` (a timeout, a lost connection).
    package func failed(_ error: any Error) { failed(error, at: clock.date) }

    /// `failed` at `now`.
    package func failed(_ error: any Error, at now: Date) {
        let text = String(String(describing: error).prefix(200))
        state.withLock {
            if $0.failingSince == nil { $0.failingSince = now }
            $0.lastError = text
        }
        gauge?.record(1)
    }

    /// nil while it works; else since when it fails and its latest error.
    package var problem: (since: Date, error: String)? {
        state.withLock { state in state.failingSince.map { ($0, state.lastError) } }
    }

    /// Records the outcome of `work`. An error for which `isAnswer` holds came from a component
    /// that answered (the ADAMANT store's lost lease), and counts as a success.
    package func track<T>(_ work: () async throws -> T, isAnswer: (any Error) -> Bool = { _ in false }) async throws -> T {
        do {
            let value = try await work()
            succeeded()
            return value
        } catch {
            if isAnswer(error) {
                succeeded()
            } else if !(error is CancellationError) {
                failed(error)
            }
            throw error
        }
    }
}
