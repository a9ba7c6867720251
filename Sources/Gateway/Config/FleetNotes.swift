import DeliveryRecord
import HeraldCore

extension GatewayConfig {
    /// `check-config`'s note for a fleet whose record is each instance's memory: instances that
    /// share a PostgreSQL database for the Status store or ADAMANT are a fleet, and each of them
    /// sends a notify that reached it, so a homeserver's retry through the load balancer reaches
    /// the upstream again (docs/deployment.md, "A fleet").
    ///
    /// With the record on PostgreSQL, a note of the connections each instance holds there, which
    /// PostgreSQL's `max_connections` must allow for the whole fleet.
    static func fleetNotes(_ config: GatewayConfig, diagnostics: ConfigDiagnostics) {
        let record = config.notify.record
        if record.repeatWindow > .zero, record.repeatStore != nil {
            diagnostics.note(
                "notify.repeat_store_max_connections",
                "each instance keeps \(record.connectionsKeptOpen) connections to the record's PostgreSQL open and opens up to "
                    + "\(record.repeatStoreMaxConnections): PostgreSQL's max_connections must allow that many for every instance, "
                    + "besides the Status and ADAMANT stores' own (docs/configuration.md)")
        }
        guard record.repeatWindow > .zero, record.repeatStore == nil else { return }
        for section in ["status", "adamant"] {
            guard case .map(let values)? = config.extraSections[section], case .string(let store)? = values["store"],
                isPostgresURL(store)
            else { continue }
            diagnostics.note(
                "notify.repeat_store",
                "memory, while \(section).store is a PostgreSQL database: instances sharing this database each send a repeated notify; "
                    + "name the same database here so that a fleet delivers once (docs/deployment.md, \"A fleet\")")
            return
        }
    }
}
