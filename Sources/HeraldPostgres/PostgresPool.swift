import HeraldCore
package import Logging
package import PostgresNIO
import ServiceLifecycle
import Synchronization

/// A PostgreSQL store's pool of connections (PostgresNIO's `PostgresClient`), a service of the
/// gateway's group, renewed when it has given up on a database that answers again.
///
/// After a minute without a connection, PostgresNIO's pool fails every operation at once
/// (`PostgresFailure.isCircuitBroken`) until one of its own attempts connects, and those attempts
/// back off to a minute apart (15 s apart by the time it gives up). After a long outage the store
/// would so stay unusable for up to a minute after its database is back, its probe answered and
/// its uses refused by turns. Here a refusal marks the pool as given up (`refused`); the silent
/// store's probe, on a connection of its own, then renews it once the database answers
/// (`renewIfGivenUp`): a new client takes the old one's place and connects at once, and the old
/// one, which holds no connection, is stopped. One of the old pool's own attempts may connect
/// first: a pool that leases again is kept.
package final class PostgresPool: Service, Sendable {
    private struct Running: Sendable {
        let client: PostgresClient
        /// Finished to stop the client's `run()`.
        let stop: AsyncStream<Never>.Continuation
    }

    /// A renewal under way: its client, started by `run()`, and the gate that opens once it is the
    /// current one.
    private struct Renewal: Sendable {
        let next: Running
        let placed: ReadinessGate<Void>
    }

    private struct State: Sendable {
        var current: Running
        /// A lease failed because the pool gave up connecting, since the last renewal.
        var givenUp = false
        var renewing: Renewal?
        var renewals = 0
    }

    /// A client for `run()` to run until `stopped` finishes; a renewal's takes the current one's
    /// place first.
    private struct Start: Sendable {
        let client: PostgresClient
        let stopped: AsyncStream<Never>
        let renews: Bool
    }

    private let configuration: PostgresClient.Configuration
    private let logger: Logger
    private let state: Mutex<State>
    private let starts: AsyncStream<Start>
    private let startsContinuation: AsyncStream<Start>.Continuation

    /// `logger`: the store's (PostgresNIO's pool gets it through `PostgresPoolLog`).
    package init(configuration: PostgresClient.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let client = PostgresClient(
            configuration: configuration, eventLoopGroup: PostgresLoop.group, backgroundLogger: PostgresPoolLog.logger(logger))
        let (stopped, stop) = AsyncStream<Never>.makeStream()
        state = Mutex(State(current: Running(client: client, stop: stop)))
        (starts, startsContinuation) = AsyncStream<Start>.makeStream()
        startsContinuation.yield(Start(client: client, stopped: stopped, renews: false))
    }

    /// The client every operation uses now.
    package var client: PostgresClient { state.withLock { $0.current.client } }

    /// How often the pool was renewed, for tests.
    package var renewals: Int { state.withLock { $0.renewals } }

    /// `error`, that a store operation threw, is the pool's refusal to wait for a connection:
    /// renew it when the database answers again.
    package func refused(_ error: any Error) {
        guard PostgresFailure.isCircuitBroken(error) else { return }
        state.withLock { if $0.renewing == nil { $0.givenUp = true } }
    }

    /// The database answered a connection of the store's own (its probe): a pool that gave up is
    /// replaced by a new one, which connects at once. Returns once the new one is in place (the
    /// caller bounds the wait; the gateway's group runs `run()`).
    package func renewIfGivenUp() async throws {
        let (configuration, logger) = (self.configuration, self.logger)
        let current = state.withLock { state -> PostgresClient? in state.renewing == nil && state.givenUp ? state.current.client : nil }
        if let current {
            // Its own attempt may have connected meanwhile: a pool that leases is kept, with what it holds.
            do {
                try await current.withConnection { _ in }
                state.withLock { $0.givenUp = false }
                return
            } catch  where PostgresFailure.isCircuitBroken(error) {
                // Still refusing: replaced below.
            }
        }
        let turn = state.withLock { state -> (placed: ReadinessGate<Void>, start: Start?)? in
            if let renewing = state.renewing { return (renewing.placed, nil) }
            guard state.givenUp else { return nil }
            state.givenUp = false
            let client = PostgresClient(
                configuration: configuration, eventLoopGroup: PostgresLoop.group, backgroundLogger: PostgresPoolLog.logger(logger))
            let (stopped, stop) = AsyncStream<Never>.makeStream()
            let placed = ReadinessGate<Void>()
            state.renewing = Renewal(next: Running(client: client, stop: stop), placed: placed)
            return (placed, Start(client: client, stopped: stopped, renews: true))
        }
        guard let turn else { return }
        if let start = turn.start, case .terminated = startsContinuation.yield(start) {
            state.withLock { $0.renewing = nil }
            turn.placed.fail(CancellationError())
        }
        try await turn.placed.wait()
    }

    /// Runs the current client, and each renewal's in its place, until the shutdown; a replaced
    /// client is stopped.
    package func run() async {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for await start in starts {
                    group.addTask { await self.run(start) }
                }
            }
        } onGracefulShutdown: {
            self.startsContinuation.finish()
        }
    }

    private func run(_ start: Start) async {
        if start.renews {
            let swapped = state.withLock { state -> (old: Running, placed: ReadinessGate<Void>)? in
                guard let renewing = state.renewing else { return nil }
                defer {
                    state.current = renewing.next
                    state.renewing = nil
                    state.renewals += 1
                }
                return (state.current, renewing.placed)
            }
            guard let swapped else { return }
            swapped.old.stop.finish()
            logger.notice(
                "PostgreSQL answers again, but the pool had given up connecting to it: a new pool takes its place, so that the store is used at once"
            )
            swapped.placed.open(())
        }
        // The client runs until it is replaced (`stopped` finishes) or the gateway shuts down (its
        // own `run()` ends then).
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await start.client.run() }
            group.addTask { for await _ in start.stopped {} }
            await group.next()
            group.cancelAll()
        }
    }
}
