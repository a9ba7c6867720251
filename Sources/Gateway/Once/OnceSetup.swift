import HeraldCore
import Logging
import Metrics
import Pushkins
import ServiceLifecycle

/// The gateway's delivery record and answer deadline, made once from `notify:` and kept across
/// reloads (docs/operations.md, "Once"): the `Once` every dispatcher uses, the services it needs
/// (the PostgreSQL pool) and its health.
struct OnceSetup: Sendable {
    let once: Once
    let services: [any Service]
    let health: [ComponentHealth]

    init(_ notify: GatewayConfig.Notify, counters: CounterCache, metrics: any MetricsFactory, logger: Logger, clock: any HeraldClock)
        throws
    {
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
    /// `check-config`'s note for a fleet whose record is each instance's memory: instances that
    /// share a PostgreSQL database for the Status store or ADAMANT are a fleet, and each of them
    /// sends a notify that reached it, so a homeserver's retry through the load balancer reaches
    /// the upstream again (docs/deployment.md, "A fleet").
    static func fleetNotes(_ config: GatewayConfig, diagnostics: ConfigDiagnostics) {
        guard config.notify.repeatWindow > .zero, config.notify.repeatStore == nil else { return }
        for section in ["status", "adamant"] {
            guard case .map(let values)? = config.extraSections[section], case .string(let store)? = values["store"],
                store.hasPrefix("postgres://") || store.hasPrefix("postgresql://")
            else { continue }
            diagnostics.note(
                "notify.repeat_store",
                "memory, while \(section).store is a PostgreSQL database: instances sharing this database each send a repeated notify; "
                    + "name the same database here so that a fleet delivers once (docs/deployment.md, \"A fleet\")")
            return
        }
    }

    /// No record, no services: every device sent in its request's task.
    static var none: OnceSetup {
        OnceSetup(once: Once(guardian: nil, answerWithin: .seconds(20)), services: [], health: [])
    }

    private init(once: Once, services: [any Service], health: [ComponentHealth]) {
        self.once = once
        self.services = services
        self.health = health
    }
}
