import HeraldCore
import ServiceLifecycle

/// A PostgreSQL store's check at start, a service of the gateway's group: one probe
/// (`PostgresStoreBound.checkAtStart`) as the gateway starts, so that a wrong password, a missing
/// database or an unreachable host is in the log (the store's `ComponentHealth`) and in `/health`
/// at once, with its fix, not only after the first operation's timeout (docs/operations.md, "A
/// silent store"). The store is then silent until it answers. The service then waits for the
/// shutdown.
package struct PostgresStartCheck: Service {
    let bound: PostgresStoreBound

    package init(bound: PostgresStoreBound) { self.bound = bound }

    package func run() async throws {
        _ = await bound.checkAtStart()
        try? await gracefulShutdown()
    }
}
