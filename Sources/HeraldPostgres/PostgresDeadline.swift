import NIOCore
import NIOPosix

/// A store operation's wait for PostgreSQL, bounded.
package enum PostgresDeadline {
    /// The database did not answer within the store's timeout (it is down or unreachable).
    package struct Unavailable: Error, CustomStringConvertible {
        package init() {}
        package var description: String { "the PostgreSQL store did not answer in time" }
    }

    /// `work` within `timeout`, else `Unavailable`. The caller does not wait for `work` past the
    /// timeout: `work` is cancelled then, but a query sent on a connection that died under it
    /// (PostgreSQL killed mid-request) may never complete whatever its cancellation, so it is not
    /// awaited (a task of its own, then abandoned; it ends when its connection is finally closed).
    package static func bounded<T: Sendable>(_ timeout: Duration, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let promise = loop.makePromise(of: T.self)
        let task = promise.completeWithTask(work)
        let timer = loop.scheduleTask(in: .nanoseconds(timeout.nanosecondsClamped)) {
            promise.fail(Unavailable())
            task.cancel()
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return try await promise.futureResult.get()
    }
}

extension Duration {
    fileprivate var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        return seconds > Int64.max / 1_000_000_000 ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
