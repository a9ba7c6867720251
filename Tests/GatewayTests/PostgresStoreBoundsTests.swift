import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing

@testable import StatusAdapter

/// How the PostgreSQL stores are bounded: in time, against a database that hangs (its processes
/// stopped: connections open, nothing answered), where every operation ends at the store's timeout
/// and at once when its task is cancelled, as a shutdown cancels it (docs/operations.md,
/// "Shutdown"); and in connections (`store_max_connections`).
@Suite(.serialized) struct PostgresStoreBoundsTests {
    /// `status.store_timeout`'s default.
    static let storeTimeout = Duration.seconds(5)

    @Test(
        .enabled(if: ThrowawayPostgres.available && TestPostgres.url != nil, "needs root and PostgreSQL's server"),
        .timeLimit(.minutes(1)))
    func aStoreOperationEndsAtItsTimeoutAndAtOnceWhenCancelled() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        var logger = Logger(label: "hung-database-test")
        logger.logLevel = .critical
        // The shipped `store_timeout`, on a manual clock: the test moves time past it.
        let clock = ManualClock()
        let quick = try PostgresStatusStore(url: postgres.url, logger: logger, timeout: Self.storeTimeout, clock: clock)
        // Only a cancellation can end this one's operations within the test's time limit.
        let patient = try PostgresStatusStore(url: postgres.url, logger: logger, timeout: .seconds(600), clock: SystemClock())
        try await withThrowingTaskGroup(of: Void.self) { services in
            for service in quick.services + patient.services { services.addTask { try await service.run() } }
            try await quick.migrate()
            // Both have a connection the server answered on before it hung.
            #expect(try await quick.registration(publicKey: [1], installationId: "a") == nil)
            #expect(try await patient.registration(publicKey: [1], installationId: "a") == nil)
            // No deadline of the quick store is armed (its check at start done): the one waited
            // for below is the hung operation's. On a loaded machine the check could still be
            // under way, and moving the clock past its deadline left the operation's armed.
            let quiet = await eventually { clock.loopTimers == 0 }
            #expect(quiet)
            try postgres.freeze()

            async let hung = errorThrown { _ = try await quick.registration(publicKey: [1], installationId: "a") }
            let armed = await eventually { clock.loopTimers(dueIn: Self.storeTimeout) >= 1 }
            #expect(armed)
            clock.advance(by: Self.storeTimeout)
            let timedOut = await hung
            #expect(timedOut is PostgresDeadline.Unavailable, "\(String(describing: timedOut))")
            let ended = await withTaskGroup(of: (any Error)?.self) { operation in
                operation.addTask {
                    do {
                        _ = try await patient.registration(publicKey: [1], installationId: "a")
                        return nil
                    } catch {
                        return error
                    }
                }
                operation.cancelAll()
                return await operation.next() ?? nil
            }
            #expect(ended is CancellationError, "\(String(describing: ended))")

            try postgres.thaw()
            services.cancelAll()
        }
    }

    /// An instance whose Status store hangs while it starts (it waits for the database, as it does
    /// for one that is down) ends on SIGTERM within the grace period and exits 0.
    @Test(
        .enabled(
            if: ThrowawayPostgres.available && TestPostgres.url != nil && StatusDurabilityTests.heraldBinary != nil,
            "needs root, PostgreSQL's server and the herald executable"))
    func anInstanceStartingOnAHungDatabaseEndsOnSIGTERM() async throws {
        let binary = try #require(StatusDurabilityTests.heraldBinary)
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let dir = temporaryDirectory()
        try postgres.freeze()
        let yaml =
            "log:\n  level: debug\n"
            + gatewayYAML(apps: webpushApp("com.example.webpush", directory: dir), extra: "status:\n  store: \(postgres.url)\n")
        try yaml.write(toFile: "\(dir)/herald.yaml", atomically: true, encoding: .utf8)
        let herald = try AdamantDurabilityTests.Herald.launch(binary, config: "\(dir)/herald.yaml", log: "\(dir)/herald.log")
        // The group runs (it traps SIGTERM before it starts a service); the Status store waits on the database.
        #expect(try await AdamantEndToEndTests.eventually { herald.output.contains("Starting service sl-service=") })
        await herald.expectCleanStop()
    }

    /// `status.store_max_connections` bounds the store's pool: many operations at once share that
    /// many connections, as PostgreSQL's own view of its backends shows.
    @Test(.enabled(if: TestPostgres.url != nil, "needs PostgreSQL"))
    func theStorePoolOpensAtMostItsMaximumOfConnections() async throws {
        var logger = Logger(label: "pool-size-test")
        logger.logLevel = .critical
        let url = try await TestPostgres.createDatabase(prefix: "pool")
        let database = try #require(URLComponents(string: url)?.path.dropFirst()).description
        let store = try PostgresStatusStore(url: url, logger: logger, timeout: .seconds(60), maxConnections: 2, clock: SystemClock())
        let observer = try PostgresStatusStore(
            url: try #require(TestPostgres.url), logger: logger, timeout: .seconds(60), clock: SystemClock())
        try await withThrowingTaskGroup(of: Void.self) { services in
            for service in store.services + observer.services { services.addTask { try await service.run() } }
            try await store.migrate()
            // 40 reads at once, each holding its connection for 50 ms of the server's time.
            try await withThrowingTaskGroup(of: Void.self) { reads in
                for _ in 0..<40 { reads.addTask { try await store.holdConnection(milliseconds: 50) } }
                try await reads.waitForAll()
            }
            let backends = try await observer.backends(of: database)
            #expect(backends >= 1 && backends <= 2, "\(backends) connections")
            services.cancelAll()
        }
    }
}

/// The error `work` throws, nil when it returns.
func errorThrown(by work: () async throws -> Void) async -> (any Error)? {
    do {
        try await work()
        return nil
    } catch {
        return error
    }
}

extension PostgresStatusStore {
    /// One query that holds its connection for `milliseconds` of the server's time (the server
    /// waits; the test waits on the queries' ends).
    fileprivate func holdConnection(milliseconds: Int) async throws {
        for try await _ in try await client.query("SELECT pg_sleep_for(\("\(milliseconds) milliseconds")::interval)", logger: Self.logger) {
        }
    }

    /// The server's backends connected to `database`.
    fileprivate func backends(of database: String) async throws -> Int {
        let rows = try await client.query("SELECT count(*) FROM pg_stat_activity WHERE datname = \(database)", logger: Self.logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }
}

/// A silent database (its processes stopped: connections open, nothing answered) costs one
/// timeout, not one per operation (docs/operations.md, "A silent store"): once an operation missed
/// its deadline, the others fail at once while a probe in the background tests the database, one
/// at a time, until one is answered; and a gorush enqueue that was answered "failed" never commits
/// when the database wakes up. It runs on real time, at a timeout of 1 s: what keeps that enqueue
/// from committing is its deadline in PostgreSQL's own clock, which no manual clock moves.
@Suite(.serialized) struct SilentStoreTests {
    @Test(
        .enabled(if: ThrowawayPostgres.available && TestPostgres.url != nil, "needs root and PostgreSQL's server"),
        .timeLimit(.minutes(2)))
    func aSilentStoreIsSkippedButForOneProbeAndAFailedEnqueueNeverCommits() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        var logger = Logger(label: "silent-database-test")
        logger.logLevel = .critical
        // One connection: the statement sent while the database was stopped holds it until it is
        // done, so the enqueue after the thaw runs after it.
        let store = try PostgresStatusStore(
            url: postgres.url, logger: logger, timeout: .seconds(5), maxConnections: 1, clock: SystemClock())
        let reader = try PostgresStatusStore(url: postgres.url, logger: logger, timeout: .seconds(60), clock: SystemClock())
        let health = try #require(store.health)
        try await withThrowingTaskGroup(of: Void.self) { services in
            for service in store.services + reader.services { services.addTask { try await service.run() } }
            try await store.migrate()
            try await reader.migrate()
            // The timeout is the default (5 s), in real time: the guarantee that a failed enqueue
            // never commits rests on a deadline in PostgreSQL's own clock. Should the first
            // connection take longer on a loaded machine, the store is skipped until its probe is
            // answered, and asked again.
            #expect(await eventually { (try? await store.enqueueGorush([Array("before".utf8)], maxJobs: 100, maxBytes: 1 << 20)) == true })
            try postgres.freeze()

            await #expect(throws: PostgresDeadline.Unavailable.self) {
                _ = try await store.enqueueGorush([Array("while stopped".utf8)], maxJobs: 100, maxBytes: 1 << 20)
            }
            #expect(health.isSilent)
            // Silent: every operation fails at once, and a use a second later starts a background
            // probe (`SELECT 1`) instead of being tried.
            await #expect(throws: ComponentHealth.Skipped.self) {
                _ = try await store.enqueueGorush([Array("skipped".utf8)], maxJobs: 100, maxBytes: 1 << 20)
            }
            let probing = await eventually {
                _ = try? await store.registration(publicKey: [1], installationId: "a")
                return health.isProbing
            }
            #expect(probing)
            await #expect(throws: ComponentHealth.Skipped.self) {
                _ = try await store.registration(publicKey: [1], installationId: "a")
            }

            try postgres.thaw()
            // Once a probe is answered, operations are tried again.
            let answered = await eventually {
                (try? await store.enqueueGorush([Array("after".utf8)], maxJobs: 100, maxBytes: 1 << 20)) == true
            }
            #expect(answered && !health.isSilent)
            let jobs = try await reader.claimGorush(limit: 100, now: Date(), until: Date().addingTimeInterval(60))
            // The enqueue answered "failed" while the database was stopped never committed later.
            #expect(Set(jobs.map { String(decoding: $0.body, as: UTF8.self) }).isSubset(of: ["before", "after"]))
            #expect(jobs.map { String(decoding: $0.body, as: UTF8.self) }.contains("after"))
            services.cancelAll()
        }
    }
}
