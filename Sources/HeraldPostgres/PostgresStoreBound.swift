package import HeraldCore
package import PostgresNIO

/// What every operation of a PostgreSQL store goes through (the delivery record's, the Status
/// store's, ADAMANT's): its work within the store's timeout (`PostgresDeadline.bounded`), its
/// outcome the store's health (`ComponentHealth`), and, once the store missed a deadline, skipped
/// but for one probe at a time (`SELECT 1`, made once here, not per operation), so that a silent
/// database costs its callers one timeout, not one each ("A silent store", docs/operations.md).
/// A PostgresNIO error comes out as a `PostgresFailure`, which says what failed.
package struct PostgresStoreBound: Sendable {
    package let tracker: ComponentHealth
    package let timeout: Duration
    /// The clock its bounds run on.
    private let clock: any LoopClock
    private let probe: @Sendable () async throws -> Void
    /// An error that is the database's answer, not its failure (ADAMANT's lost lease).
    private let isAnswer: @Sendable (any Error) -> Bool

    /// The store's pool, renewed by a probe that finds the database answering after the pool gave
    /// up on it (`PostgresPool`).
    private let pool: PostgresPool?

    /// `connection`: the store's URL as one connection's configuration, for the probe
    /// (`PostgresDeadline.probe`, outside the pool).
    package init(
        connection: PostgresConnection.Configuration, pool: PostgresPool?, timeout: Duration, clock: any LoopClock,
        tracker: ComponentHealth, isAnswer: @escaping @Sendable (any Error) -> Bool = { _ in false }
    ) {
        self.tracker = tracker
        self.timeout = timeout
        self.clock = clock
        self.isAnswer = isAnswer
        self.pool = pool
        let probe = PostgresDeadline.probe(connection, within: timeout, clock: clock)
        self.probe = {
            try await Self.described(nil, probe)
            if let pool { try await PostgresDeadline.bounded(timeout, clock: clock) { try await pool.renewIfGivenUp() } }
        }
    }

    /// Probes the database once, at start (`ComponentHealth.checkAtStart`): the error, if any.
    package func checkAtStart() async -> (any Error)? { await tracker.checkAtStart(probe) }

    /// `work` that bounds its own waits (a batch's statement run within the timeout, `Batcher`),
    /// its outcome the store's health, skipped as `run`'s work is: no task or timer per call.
    package func tracked<T: Sendable>(_ work: () async throws -> T) async throws -> T {
        try await tracker.track(
            { try await Self.described(pool, work) }, isAnswer: isAnswer, isSilence: PostgresDeadline.isSilence, probe: probe)
    }

    /// `tracked`'s halves, for work handed to another task that bounds its own waits (a statement
    /// the batch's leader runs, `Batcher.hand`): `begin` throws `Skipped` while the store is silent;
    /// `end` takes its outcome, described as `tracked`'s is.
    package func begin() throws -> ComponentHealth.Use { try tracker.begin(probe: probe) }

    package func end<T>(_ use: ComponentHealth.Use, _ result: Result<T, any Error>) -> Result<T, any Error> {
        let described = result.mapError { error -> any Error in
            pool?.refused(error)
            return PostgresFailure(error) ?? error
        }
        return tracker.end(use, described, isAnswer: isAnswer, isSilence: PostgresDeadline.isSilence)
    }

    /// `work` within the timeout, after `prepare` within it too (a table made on first use).
    package func run<T: Sendable>(
        prepare: (@Sendable () async throws -> Void)? = nil, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let (timeout, clock, pool) = (self.timeout, self.clock, self.pool)
        return try await tracker.track(
            {
                try await Self.described(pool) {
                    if let prepare { try await PostgresDeadline.bounded(timeout, clock: clock, prepare) }
                    return try await PostgresDeadline.bounded(timeout, clock: clock, work)
                }
            }, isAnswer: isAnswer, isSilence: PostgresDeadline.isSilence, probe: probe)
    }

    /// `work`, a PostgresNIO error it throws replaced by what the log and `/health` say of it
    /// (`PostgresFailure`); the pool's refusal to wait for a connection is told to `pool`.
    private static func described<T>(_ pool: PostgresPool?, _ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch {
            pool?.refused(error)
            throw PostgresFailure(error) ?? error
        }
    }
}
