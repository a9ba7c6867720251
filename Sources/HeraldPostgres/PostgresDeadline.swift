package import HeraldCore
import Logging
import NIOCore
import NIOPosix
package import PostgresNIO
import Synchronization

/// A store operation's wait for PostgreSQL, bounded.
package enum PostgresDeadline {
    /// The database did not answer within the store's timeout (it is down or unreachable).
    package struct Unavailable: Error, CustomStringConvertible {
        package init() {}
        package var description: String { "the PostgreSQL store did not answer in time" }
    }

    /// Whether `error` says the database did not answer in time, or that the pool gave up
    /// connecting to it for now (`PostgresFailure.isCircuitBroken`): what makes a store silent
    /// (`ComponentHealth.track`, which then skips it but for one probe at a time, on a connection
    /// of its own, whose failure says why).
    package static func isSilence(_ error: any Error) -> Bool {
        error is Unavailable || (error as? PostgresFailure)?.isUnreachable == true || PostgresFailure.isCircuitBroken(error)
    }

    /// A silent store's probe: `SELECT 1` within `timeout` on `clock`, on a connection of its own
    /// (`connection`, the store's URL) outside the pool, closed after: the pool tries a refused
    /// connection again without saying why, and the probe's failure (a refused password, a
    /// missing database) is then what `/health` shows.
    package static func probe(
        _ connection: PostgresConnection.Configuration, within timeout: Duration, clock: any LoopClock
    ) -> @Sendable () async throws -> Void {
        let logger = Logger(label: "herald.postgres.probe")
        let ids = Atomic(0)
        return {
            try await bounded(timeout, clock: clock) {
                let id = ids.add(1, ordering: .relaxed).newValue
                let opened = try await PostgresConnection.connect(
                    on: PostgresLoop.loop, configuration: connection, id: id, logger: logger
                ).get()
                do {
                    for try await _ in try await opened.query("SELECT 1", logger: logger) {}
                } catch {
                    try? await opened.close()
                    throw error
                }
                try await opened.close()
            }
        }
    }

    /// `work` within `timeout` on `clock` (the loops' own in Herald, a test's manual clock), else
    /// `Unavailable`; `CancellationError` at once when the caller is cancelled (a shutdown does
    /// not wait for the database). The caller does not wait for `work`
    /// past either: `work` is cancelled then, but a query sent on a connection that died under it
    /// (PostgreSQL killed mid-request) may never complete whatever its cancellation, so it is not
    /// awaited (a task of its own, then abandoned; it ends when its connection is finally closed).
    ///
    /// The task runs on `given`, else on the caller's event loop when it is on one (a request's
    /// task prefers its connection's loop): the store's work then stays on one thread, without two
    /// hops through Swift's global pool for every operation. The record's statements give the
    /// stores' own loop (`PostgresLoop`), where their connections read the answers.
    package static func bounded<T: Sendable>(
        _ timeout: Duration, clock: any LoopClock, on given: (any EventLoop)? = nil, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let loop = given ?? MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
        let promise = loop.makePromise(of: T.self)
        let task = Task(executorPreference: EventLoopTaskExecutor(loop)) {
            do {
                promise.succeed(try await work())
            } catch {
                promise.fail(error)
            }
        }
        let timer = clock.schedule(in: TimeAmount(timeout), on: loop) {
            promise.fail(Unavailable())
            task.cancel()
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(CancellationError())
            task.cancel()
        }
    }

    /// `query`'s rows on `connection` within `limit` on `clock` (nil: however long it takes), else
    /// `Unavailable`; `CancellationError` at once when the caller is cancelled. For a connection
    /// held across operations (a session lock's, a migration's), where a query that never answers
    /// must not hold the caller: it is awaited as a future, which the timer or the cancellation
    /// completes instead.
    package static func rows(
        _ connection: PostgresConnection, _ query: PostgresQuery, within limit: Duration?, clock: any LoopClock, logger: Logger
    ) async throws -> [PostgresRow] {
        if connection.isClosed { throw Unavailable() }
        let promise = connection.eventLoop.makePromise(of: [PostgresRow].self)
        if let limit {
            let timer = clock.schedule(in: TimeAmount(limit), on: connection.eventLoop) { promise.fail(Unavailable()) }
            promise.futureResult.whenComplete { _ in timer.cancel() }
        }
        connection.query(query, logger: logger).whenComplete { result in promise.completeWith(result.map(\.rows)) }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(CancellationError())
        }
    }
}
