/// `notify:`'s settings of the delivery record and the answer's deadline (docs/operations.md,
/// "Once"), read by the gateway's config, from which `OnceSetup` makes the record.
package struct RecordSettings: Sendable {
    /// How long a delivery is remembered (0: never; every notify is sent).
    package var repeatWindow: Duration = .seconds(7200)
    /// nil: this instance's memory; else a `postgres://` URL shared by a fleet.
    package var repeatStore: String?
    package var repeatMaxEntries = 200_000
    package var repeatMaxBytes = 32 << 20
    /// A claim older than this is an instance that died mid-call: another takes it over.
    package var repeatTakeover: Duration = .seconds(60)
    package var repeatStoreTimeout: Duration = .seconds(1)
    package var repeatStoreMaxConnections = 8
    /// The memory record's delivery traces, in bytes (0: none kept).
    package var traceMaxBytes = 8 << 20
    /// Every notify is answered within this; devices whose upstream has not answered are 502
    /// while their calls go on.
    package var answerWithin: Duration = .seconds(20)
    /// A 200 written on an open connection within this of its request's arrival was heard: a
    /// notify sent again after it is sent again. A later 200 may have been written into a
    /// proxy's connection whose client had gone, so its repeat is answered from the record.
    package var heardWithin: Duration = .seconds(2)

    package init() {}

    /// How many statements of each kind (claims, finishes) the PostgreSQL record runs at once: one
    /// per eight of `repeatStoreMaxConnections`. Fewer at once make each statement carry more
    /// notifies: at the default pool (8), one of each made 0.13 statements a notify in
    /// bench/run.sh's PostgreSQL row where two of each made 0.22, and cost PostgreSQL about a third
    /// less CPU a notify (docs/operations.md, stop 68).
    package var statementsAtOnce: Int { max(1, repeatStoreMaxConnections / 8) }

    /// The connections those statements use, which the PostgreSQL record keeps open.
    package var connectionsKeptOpen: Int { min(repeatStoreMaxConnections, 2 * statementsAtOnce) }
}
