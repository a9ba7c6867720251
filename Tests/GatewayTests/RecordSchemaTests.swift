import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing

@testable import DeliveryRecord
@testable import Gateway

/// The PostgreSQL record's table and functions (`PostgresRecordSchema`) on a real PostgreSQL.
@Suite struct RecordSchemaTests {
    static let logger = Logger(label: "test")

    /// A database an earlier Herald made (the first table, no trace columns, no functions) is
    /// brought up to date on first use, its records still answered from; the claim and the finish
    /// functions plan each call for its values: a plan made once for every value cost PostgreSQL
    /// about twice the CPU a call (docs/operations.md, stop 70).
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func anEarlierHeraldsTableGetsItsColumnsAndTheFunctionsOnFirstUse() async throws {
        let records = try await OnceTests.postgresRecords(clock: SystemClock())
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        let sent = RepeatKey(["$sent", "app", "pushkey"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await records.pool.run() }
            func rows(_ query: PostgresQuery) async throws -> [String] {
                var found: [String] = []
                for try await value in try await records.pool.client.query(query, logger: Self.logger).decode(String.self) {
                    found.append(value)
                }
                return found
            }
            _ = try await rows(
                "CREATE TABLE herald_deliveries (key TEXT PRIMARY KEY, state TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL)")
            _ = try await rows(
                "INSERT INTO herald_deliveries VALUES (\(sent.digest), 'delivered', \(now.timeIntervalSince1970 + 3600))")
            #expect(try await records.claim(key: sent, trace: nil, instance: "new", now: now) == .recorded(.delivered))
            let fresh = RepeatKey(["$fresh", "app", "pushkey"])
            let trace = TraceStart(eventId: "$fresh", appId: "app", pushkey: "pushkey")
            #expect(try await records.claim(key: fresh, trace: trace, instance: "new", now: now) == .claimed)
            try await records.finish(key: fresh, .delivered, trace: nil, now: now + 1)
            #expect(try await records.claim(key: fresh, trace: trace, instance: "new", now: now + 2) == .recorded(.delivered))
            let settings = try await rows(
                """
                SELECT proname || ' ' || array_to_string(proconfig, ',') FROM pg_proc
                WHERE proname IN ('herald_claim_v1', 'herald_finish_v1') ORDER BY proname
                """)
            #expect(
                settings == [
                    "herald_claim_v1 plan_cache_mode=force_custom_plan", "herald_finish_v1 plan_cache_mode=force_custom_plan",
                ])
            group.cancelAll()
        }
    }

    /// A database user without the right to create in its schema (PostgreSQL 15's default for a
    /// user that does not own `public`): the record cannot make its table, each notify is still
    /// delivered once (this instance's memory stands in), and `/health` says what PostgreSQL
    /// refused and what to grant, not PostgresNIO's generic sentence.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aUserWithoutTheRightToCreateIsToldWhatToGrant() async throws {
        let url = try await TestPostgres.createDatabase(prefix: "herald_rights")
        var components = try #require(URLComponents(string: url))
        let role = "herald_limited_\(UInt32.random(in: 0...UInt32.max))"
        let admin = PostgresClient(
            configuration: .init(
                host: components.host ?? "127.0.0.1", port: components.port ?? 5432, username: components.user ?? "postgres",
                password: components.password, database: String(components.path.dropFirst()), tls: .disable),
            backgroundLogger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await admin.run() }
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN"), logger: Self.logger)
            try await admin.query(PostgresQuery(unsafeSQL: "REVOKE CREATE ON SCHEMA public FROM PUBLIC"), logger: Self.logger)
            group.cancelAll()
        }
        components.user = role
        components.password = nil
        let limited = try #require(components.string)
        let setup = try await APNsEndToEndTests().start(top: "notify:\n  repeat_store: \(limited)")
        let key = APNsEndToEndTests.pushkey()
        let answered = try await OnceTests().notify(setup.herald, key)
        let health = try await setup.herald.request(.GET, "/health")
        await setup.stop()
        #expect(answered.status == 200 && answered.json == ["rejected": []])
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)
        let problem = health.json?["failing"]?["repeat_store"].map { "\($0)" } ?? ""
        #expect(problem.contains("SQLSTATE 42501: permission denied for schema public"), "\(health.text)")
        #expect(problem.contains("GRANT CREATE ON SCHEMA public"), "\(health.text)")
        #expect(!health.text.contains("Generic description"), "\(health.text)")
    }

    /// A record whose database does not exist is named in `/health` as the gateway starts,
    /// before any notify (the check at start, `PostgresStartCheck`), with the fix; a notify is
    /// then delivered once from the memory record, without waiting for PostgreSQL.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aMissingDatabaseIsInHealthBeforeTheFirstNotify() async throws {
        let url = try #require(TestPostgres.missingDatabase)
        let setup = try await APNsEndToEndTests().start(top: "notify:\n  repeat_store: \(url)")
        var health = try await setup.herald.request(.GET, "/health")
        let named = await eventually {
            health = (try? await setup.herald.request(.GET, "/health")) ?? health
            return health.text.contains("3D000")
        }
        let key = APNsEndToEndTests.pushkey()
        let answered = try await OnceTests().notify(setup.herald, key)
        await setup.stop()
        #expect(named, "\(health.text)")
        let problem = health.json?["failing"]?["repeat_store"].map { "\($0)" } ?? ""
        #expect(problem.contains("SQLSTATE 3D000") && problem.contains("herald_never_created"), "\(health.text)")
        #expect(problem.contains("create it"), "\(health.text)")
        #expect(answered.status == 200 && answered.json == ["rejected": []])
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)
    }
}
