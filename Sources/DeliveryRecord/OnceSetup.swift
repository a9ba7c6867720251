package import HeraldCore
package import Logging
package import Metrics
package import ServiceLifecycle

/// The gateway's delivery record and answer deadline, made once from `notify:` and kept across
/// reloads (docs/operations.md, "Once"): the `Once` every dispatcher uses, the services it needs
/// (with PostgreSQL: the pool, the finishes' leader, the check at start and the sweeper) and its
/// health.
package struct OnceSetup: Sendable {
    package let once: Once
    package let services: [any Service]
    package let health: [ComponentHealth]

    package init(
        _ notify: RecordSettings, counters: CounterCache, metrics: any MetricsFactory, logger: Logger, clock: any HeraldClock
    ) throws {
        var services: [any Service] = []
        var health: [ComponentHealth] = []
        var guardian: RepeatGuard?
        if notify.repeatWindow > .zero {
            let memory = MemoryDeliveryRecords(
                window: notify.repeatWindow, takeover: notify.repeatTakeover, maxEntries: notify.repeatMaxEntries,
                maxBytes: notify.repeatMaxBytes, traceBytes: notify.traceMaxBytes)
            var store: any DeliveryRecords = memory
            if let url = notify.repeatStore {
                let postgres = try PostgresDeliveryRecords(url: url, notify: notify, metrics: metrics, clock: clock)
                services += postgres.services
                health.append(postgres.tracker)
                store = postgres
            }
            guardian = RepeatGuard(store: store, fallback: memory, clock: clock, counters: counters, logger: logger)
        }
        once = Once(guardian: guardian, answerWithin: notify.answerWithin, heardWithin: notify.heardWithin)
        self.services = services
        self.health = health
    }
}

extension OnceSetup {
    /// No record, no services: every device sent in its request's task.
    package static var none: OnceSetup {
        OnceSetup(once: Once(guardian: nil, answerWithin: .seconds(20)), services: [], health: [])
    }

    private init(once: Once, services: [any Service], health: [ComponentHealth]) {
        self.once = once
        self.services = services
        self.health = health
    }
}
