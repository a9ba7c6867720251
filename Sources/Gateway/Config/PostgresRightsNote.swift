import HeraldCore

extension GatewayConfig {
    /// `check-config`'s note for the stores on PostgreSQL (the delivery record, the Status store,
    /// ADAMANT's): each makes its tables (the record its functions too) on first use, so its
    /// database user needs the right to create in its schema, which PostgreSQL 15 and later give
    /// only to the schema's owner. Without it the store fails on first use and says what to grant
    /// (`PostgresFailure`); the record's memory stands in meanwhile.
    static func postgresRightsNote(_ config: GatewayConfig, diagnostics: ConfigDiagnostics) {
        var stores: [String] = []
        if let url = config.notify.record.repeatStore, isPostgresURL(url) { stores.append("notify.repeat_store") }
        for section in ["status", "adamant"] {
            guard case .map(let values)? = config.extraSections[section], case .string(let store)? = values["store"], isPostgresURL(store)
            else { continue }
            stores.append("\(section).store")
        }
        guard let first = stores.first else { return }
        diagnostics.note(
            first,
            "the stores on PostgreSQL (\(stores.joined(separator: ", "))) make their tables on first use: the database user needs "
                + "CREATE on its schema (PostgreSQL 15 gives it only to the schema's owner), and PostgreSQL 12 or later "
                + "(docs/operations.md, \"The database's rights\")")
    }

    /// Whether a store's setting names a PostgreSQL database (else a SQLite file, or `memory`).
    static func isPostgresURL(_ store: String) -> Bool { store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") }
}
