import AdamantAdapter
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import Logging
import Pushkins
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The ADAMANT pollers across process deaths, with the real `herald` executable: a SIGKILL
/// between polls and a restart push every transaction exactly once; with PostgreSQL, two instances
/// share the work so that one polls, and the other takes over when the first is killed.
@Suite(.serialized) struct AdamantDurabilityTests {
    static var binary: String? { StatusDurabilityTests.heraldBinary }

    struct Herald {
        let process: ChildProcess
        let log: String
        let metricsPort: Int

        static func launch(_ binary: String, config: (path: String, metricsPort: Int), log: String) throws -> Herald {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let process = try ChildProcess.launch(binary, ["serve", "--config", config.path], error: log)
            return Herald(process: process, log: log, metricsPort: config.metricsPort)
        }

        /// A config without a known metrics port.
        static func launch(_ binary: String, config: String, log: String) throws -> Herald {
            try launch(binary, config: (config, 0), log: log)
        }

        var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

        /// Sends `signal` and waits for the process to end.
        func kill(_ signal: Int32) async { await process.stop(signal) }

        /// Sends SIGTERM and expects what docs/operations.md ("Shutdown") promises: exit 0 through
        /// the awaited path ("Shut down"; a service still running at the cancellation limit aborts
        /// the process instead), and, unless the grace period is meant to run out, no service that
        /// held the shutdown up.
        func expectCleanStop(graceMayRunOut: Bool = false) async {
            await kill(SIGTERM)
            let tail = String(output.suffix(4000))
            #expect(process.terminationStatus == 0, "\(tail)")
            #expect(output.contains("Shut down"), "\(tail)")
            if !graceMayRunOut { #expect(!output.contains("Did not stop within the shutdown grace period"), "\(tail)") }
        }

        func metrics() async throws -> String {
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/metrics"), timeout: .seconds(30))
            return String(buffer: try await response.body.collect(upTo: 1 << 24))
        }

        /// Every poller of this instance read the chain up to below `height`'s block and polled twice more.
        /// A metrics request that fails is asked again: the client's pooled connection may be one to
        /// the instance killed before this one, on the same port.
        func settled(at height: Int64) async throws -> Bool {
            try await AdamantEndToEndTests.settled({ (try? await metrics()) ?? "" }, at: height)
        }
    }

    func config(
        _ dir: String, node: FakeAdamantNode, apns: FakeAPNs, dev: FakeAPNs, store: String, extra: String = ""
    ) throws -> (path: String, metricsPort: Int) {
        let port = StatusDurabilityTests.freePort()
        let metricsPort = StatusDurabilityTests.freePort()
        let yaml = AdamantEndToEndTests.config(
            directory: dir, nodes: [node.baseURL], production: apns, development: dev, store: store,
            extra: "lease_retry: 0.2\nlease_check: 0.2\n" + extra
        )
        .replacingOccurrences(of: "    port: 0\n", with: "    port: \(metricsPort)\n")
        .replacingOccurrences(of: "  port: 0\n", with: "  port: \(port)\n")
        let path = "\(dir)/herald-\(port).yaml"
        // Debug: a failure message then shows the service group's own steps beside the services'.
        try ("log:\n  level: debug\n" + yaml).write(toFile: path, atomically: true, encoding: .utf8)
        return (path, metricsPort)
    }

    func ids(_ apns: FakeAPNs) -> [String] { apns.received.compactMap { $0.payload?["txn-id"]?.stringValue } }

    /// Waits until the PostgreSQL store holds the pushed key (the push is committed).
    func committed(store url: String, key: String) async throws -> Bool {
        let store = try PostgresAdamantStore(url: url, logger: Logger(label: "test"), clock: SystemClock())
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            for service in store.services {
                group.addTask {
                    try await service.run(); return false
                }
            }
            let reached = try await AdamantEndToEndTests.eventually { try await !store.pushed(among: [key]).isEmpty }
            group.cancelAll()
            return reached
        }
    }

    @Test(.enabled(if: binary != nil, "needs the herald executable (swift build --build-tests)"))
    func aSIGKILLBetweenPollsNeitherMissesNorRepeatsAPush() async throws {
        let binary = try #require(Self.binary)
        let dir = temporaryDirectory()
        let (apns, dev) = try await AdamantEndToEndTests.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let service = try AdamantKeys(passphrase: AdamantEndToEndTests.servicePassphrase)
        let user = try AdamantEndToEndTests.user()
        let sender = try AdamantEndToEndTests.user()
        let path = try config(dir, node: node, apns: apns, dev: dev, store: "\(dir)/adamant.sqlite")

        let first = try Herald.launch(binary, config: path, log: "\(dir)/first.log")
        let token = AdamantEndToEndTests.token()
        try node.addSignal(from: user, to: service, token: token)
        #expect(try await Self.signalsApplied(first) == 1)
        let one = try node.addChat(from: sender, to: user)
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 1 })
        // Between polls: the push is committed (read from the store itself).
        let store = try SQLiteAdamantStore(path: "\(dir)/adamant.sqlite", clock: SystemClock())
        #expect(try await AdamantEndToEndTests.eventually { try await !store.pushed(among: ["\(one.id):apns:\(token)"]).isEmpty })
        await store.close()
        await first.kill(SIGKILL)

        let two = try node.addChat(from: sender, to: user)  // while no Herald runs
        let second = try Herald.launch(binary, config: path, log: "\(dir)/second.log")
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 2 })
        let three = try node.addChat(from: sender, to: user)
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 3 })
        #expect(try await second.settled(at: node.height))
        await second.kill(SIGTERM)
        await node.stop()
        await apns.stop()
        await dev.stop()
        #expect(ids(apns) == [one.id, two.id, three.id])
        #expect(second.process.terminationStatus == 0)
    }

    /// A poller SIGKILLed in the middle of a batch (one device's push answered, another's still
    /// waiting for APNs) sends again only the push that was not answered: each push is recorded as
    /// done the moment APNs accepted it, not at the batch's commit.
    @Test(.enabled(if: binary != nil, "needs the herald executable (swift build --build-tests)"))
    func aSIGKILLInTheMiddleOfABatchSendsAgainOnlyThePushNotAnswered() async throws {
        let binary = try #require(Self.binary)
        let dir = temporaryDirectory()
        let (apns, dev) = try await AdamantEndToEndTests.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let service = try AdamantKeys(passphrase: AdamantEndToEndTests.servicePassphrase)
        let user = try AdamantEndToEndTests.user()
        let sender = try AdamantEndToEndTests.user()
        let path = try config(dir, node: node, apns: apns, dev: dev, store: "\(dir)/adamant.sqlite")
        let (answered, waiting) = (AdamantEndToEndTests.token(), AdamantEndToEndTests.token())
        // The first request for `waiting` is answered only after the kill; the next one at once.
        apns.script(waiting, .sequence([.delay(.seconds(30), then: .fail(503, "ServiceUnavailable")), .accept]))

        let first = try Herald.launch(binary, config: path, log: "\(dir)/first.log")
        try node.addSignal(from: user, to: service, token: answered)
        try node.addSignal(from: user, to: service, token: waiting)
        #expect(
            try await AdamantEndToEndTests.eventually {
                let text = (try? await first.metrics()) ?? ""
                return AdamantEndToEndTests.metric(text, #"herald_adamant_signals_total{result="add"}"#) == 2
            })
        let chat = try node.addChat(from: sender, to: user)
        let store = try SQLiteAdamantStore(path: "\(dir)/adamant.sqlite", clock: SystemClock())
        #expect(try await AdamantEndToEndTests.eventually { try await !store.pushed(among: ["\(chat.id):apns:\(answered)"]).isEmpty })
        #expect(try await store.pushed(among: ["\(chat.id):apns:\(waiting)"]).isEmpty)
        await store.close()
        await first.kill(SIGKILL)

        let second = try Herald.launch(binary, config: path, log: "\(dir)/second.log")
        #expect(try await AdamantEndToEndTests.eventually { apns.received(token: waiting).contains { $0.status == 200 } })
        #expect(try await second.settled(at: node.height))
        await second.kill(SIGTERM)
        await node.stop()
        await apns.stop()
        await dev.stop()
        #expect(apns.received(token: answered).count == 1)
        #expect(apns.received(token: waiting).filter { $0.status == 200 }.count == 1)
        #expect(second.process.terminationStatus == 0)
    }

    @Test(.enabled(if: binary != nil && TestPostgres.url != nil, "needs the herald executable and HERALD_TEST_POSTGRES_URL"))
    func withPostgresOneInstancePollsAndAnotherTakesOverWhenItDies() async throws {
        let binary = try #require(Self.binary)
        let dir = temporaryDirectory()
        let (apns, dev) = try await AdamantEndToEndTests.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let service = try AdamantKeys(passphrase: AdamantEndToEndTests.servicePassphrase)
        let user = try AdamantEndToEndTests.user()
        let sender = try AdamantEndToEndTests.user()
        let store = try await TestPostgres.createDatabase(prefix: "adamant")

        let leader = try Herald.launch(binary, config: try config(dir, node: node, apns: apns, dev: dev, store: store), log: "\(dir)/a.log")
        #expect(try await AdamantEndToEndTests.eventually { leader.output.contains("ADAMANT polling lease taken") })
        let follower = try Herald.launch(
            binary, config: try config(dir, node: node, apns: apns, dev: dev, store: store), log: "\(dir)/b.log")
        #expect(try await Self.serving(follower))
        let token = AdamantEndToEndTests.token()
        try node.addSignal(from: user, to: service, token: token)
        #expect(try await Self.signalsApplied(leader) == 1)
        let one = try node.addChat(from: sender, to: user)
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 1 })
        #expect(!follower.output.contains("ADAMANT polling lease taken"))  // one instance polls
        #expect(try await committed(store: store, key: "\(one.id):apns:\(token)"))
        await leader.kill(SIGKILL)

        let two = try node.addChat(from: sender, to: user)
        // Taken over: the follower asks for the lease every 0.2 s (`lease_retry`).
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 2 })
        #expect(follower.output.contains("ADAMANT polling lease taken"))
        #expect(try await follower.settled(at: node.height))
        await follower.kill(SIGTERM)
        await node.stop()
        await apns.stop()
        await dev.stop()
        #expect(ids(apns) == [one.id, two.id])
        #expect(follower.process.terminationStatus == 0)
    }

    /// Waits until the instance answers on its metrics port (it has started).
    static func serving(_ herald: Herald) async throws -> Bool {
        try await AdamantEndToEndTests.eventually { (try? await herald.metrics()) != nil }
    }

    /// Waits until `herald` has applied a registration signal; how many it has applied.
    static func signalsApplied(_ herald: Herald) async throws -> Int {
        var count = 0
        _ = try await AdamantEndToEndTests.eventually {
            let text = (try? await herald.metrics()) ?? ""
            count = Int(AdamantEndToEndTests.metric(text, #"herald_adamant_signals_total{result="add"}"#) ?? 0)
            return count > 0
        }
        return count
    }

    /// Polls each instance has made so far (all workers).
    static func polls(_ herald: Herald) async -> Double {
        let text = (try? await herald.metrics()) ?? ""
        return AdamantEndToEndTests.workers.reduce(0) {
            $0 + (AdamantEndToEndTests.metric(text, #"herald_adamant_polls_total{worker="\#($1)"}"#) ?? 0)
        }
    }

    /// Which of `instances` polls: the one whose poll count grows while the others' stay, watched
    /// until the poller made `polls` more polls. Nil when none or several poll.
    static func thePoller(among instances: [Herald], polls: Double = 12) async throws -> Int? {
        var start: [Double] = []
        for herald in instances { start.append(await Self.polls(herald)) }
        var now = start
        _ = try await AdamantEndToEndTests.eventually {
            now = []
            for herald in instances { now.append(await Self.polls(herald)) }
            return zip(now, start).contains { $0 - $1 >= polls }
        }
        let growing = zip(now, start).enumerated().filter { $0.element.0 > $0.element.1 }.map(\.offset)
        return growing.count == 1 ? growing[0] : nil
    }

    /// An instance whose migration waits on PostgreSQL (here for the migration lock, which
    /// another session holds: a query under way on a live connection, as when the database hangs
    /// mid-migration) gets SIGTERM: the migration ends on cancellation and the process exits 0. A
    /// migration that waited for PostgreSQL's answer held the shutdown past ServiceLifecycle's
    /// cancellation limit, an abort (the one stop 37's CI met).
    @Test(.enabled(if: binary != nil && TestPostgres.url != nil && ThrowawayPostgres.available, "needs the herald executable and root"))
    func anInstanceStartingWhileItsDatabaseHangsExitsZeroOnSIGTERM() async throws {
        let binary = try #require(Self.binary)
        let dir = temporaryDirectory()
        let (apns, dev) = try await AdamantEndToEndTests.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        // Another session takes the migration's lock first and keeps it.
        let holder = try ChildProcess.launch(
            "/usr/bin/psql",
            [postgres.url, "-c", "SELECT pg_advisory_lock(\(PostgresAdamantStore.migrationKey)), pg_sleep_for('10 minutes')"])
        #expect(try await AdamantEndToEndTests.eventually { try postgres.advisoryLock(granted: true) })
        let herald = try Herald.launch(
            binary, config: try config(dir, node: node, apns: apns, dev: dev, store: postgres.url), log: "\(dir)/a.log")
        #expect(try await Self.serving(herald))
        #expect(try await AdamantEndToEndTests.eventually { try postgres.advisoryLock(granted: false) })
        await herald.expectCleanStop(graceMayRunOut: true)
        await holder.stop(SIGKILL)
        await node.stop()
        await apns.stop()
        await dev.stop()
    }

    /// Every instance stopped by SIGTERM ends at once and exits 0, whatever the database's state:
    /// one seeking the lease, the holder, and both once PostgreSQL is down (it crashed: every
    /// connection reset) or hangs (every process stopped: connections stay open and nothing is
    /// answered, as on a frozen machine or across a partition). Either way the holder finds its
    /// lease unproven and stops polling, and neither the lease loop nor the shutdown waits for the
    /// database.
    @Test(
        .enabled(if: binary != nil && TestPostgres.url != nil && ThrowawayPostgres.available, "needs the herald executable and root"),
        arguments: ["crashes", "hangs"])
    func withPostgresEveryInstanceExitsZeroOnSIGTERMWhenTheDatabase(_ fault: String) async throws {
        let binary = try #require(Self.binary)
        let dir = temporaryDirectory()
        let (apns, dev) = try await AdamantEndToEndTests.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let store = postgres.url
        let leader = try Herald.launch(binary, config: try config(dir, node: node, apns: apns, dev: dev, store: store), log: "\(dir)/a.log")
        #expect(try await AdamantEndToEndTests.eventually { leader.output.contains("ADAMANT polling lease taken") })
        let follower = try Herald.launch(
            binary, config: try config(dir, node: node, apns: apns, dev: dev, store: store), log: "\(dir)/b.log")
        #expect(try await Self.serving(follower))
        // A follower waits for nothing: it ends at once.
        await follower.expectCleanStop()

        let seeker = try Herald.launch(
            binary, config: try config(dir, node: node, apns: apns, dev: dev, store: store), log: "\(dir)/c.log")
        #expect(try await Self.serving(seeker))
        // The seeker asks for the lock every 0.2 s (`lease_retry`): its next attempt meets the fault.
        if fault == "crashes" { try postgres.crash() } else { try postgres.freeze() }
        #expect(try await AdamantEndToEndTests.eventually { leader.output.contains("ADAMANT polling lease lost") })
        for herald in [leader, seeker] { await herald.expectCleanStop() }
        await node.stop()
        await apns.stop()
        await dev.stop()
    }

    /// With no grace period at all, SIGTERM cancels every service at once (listeners, gorush's
    /// workers, the Status server, the ADAMANT pollers, the pushkins): each ends on its
    /// cancellation, and the process exits 0 well within the cancellation limit, without the abort.
    @Test(.enabled(if: binary != nil, "needs the herald executable"))
    func everyServiceEndsOnCancellationWhenTheGracePeriodIsZero() async throws {
        let binary = try #require(Self.binary)
        let dir = temporaryDirectory()
        let (apns, dev) = try await AdamantEndToEndTests.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let status = "status:\n  store: \(dir)/status.sqlite\n  apns_app: com.example.adamant\n  gorush:\n    enabled: true\n"
        let (path, metricsPort) = try config(dir, node: node, apns: apns, dev: dev, store: "\(dir)/adamant.sqlite")
        let yaml = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(
            of: "shutdown_grace_period: 10", with: "shutdown_grace_period: 0")
        try (yaml + status).write(toFile: path, atomically: true, encoding: .utf8)
        let herald = try Herald.launch(binary, config: (path, metricsPort), log: "\(dir)/a.log")
        #expect(try await Self.serving(herald))
        #expect(try await AdamantEndToEndTests.eventually { herald.output.contains("ADAMANT poller starts") })
        await herald.expectCleanStop(graceMayRunOut: true)
        for service in ["GorushAPI", "StatusService", "AdamantService", "PushkinsService"] {
            #expect(herald.output.contains("Stopped after cancellation service=\(service)"), "\(herald.output.suffix(4000))")
        }
        await node.stop()
        await apns.stop()
        await dev.stop()
    }

    /// A PostgreSQL crash and restart under two instances: afterwards one instance polls (the
    /// other's poll count stays still), and nothing is pushed twice or missed, also what reached
    /// the chain while the database was down.
    @Test(.enabled(if: binary != nil && TestPostgres.url != nil && ThrowawayPostgres.available, "needs the herald executable and root"))
    func withPostgresACrashOfTheDatabaseLeavesOnePollerAndPushesNothingTwice() async throws {
        let binary = try #require(Self.binary)
        let dir = temporaryDirectory()
        let (apns, dev) = try await AdamantEndToEndTests.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let service = try AdamantKeys(passphrase: AdamantEndToEndTests.servicePassphrase)
        let (user, sender) = (try AdamantEndToEndTests.user(), try AdamantEndToEndTests.user())
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let instances = [
            try Herald.launch(binary, config: try config(dir, node: node, apns: apns, dev: dev, store: postgres.url), log: "\(dir)/a.log"),
            try Herald.launch(binary, config: try config(dir, node: node, apns: apns, dev: dev, store: postgres.url), log: "\(dir)/b.log"),
        ]
        for herald in instances { #expect(try await Self.serving(herald)) }
        try node.addSignal(from: user, to: service, token: AdamantEndToEndTests.token())
        #expect(
            try await AdamantEndToEndTests.eventually {
                var applied = 0.0
                for herald in instances {
                    applied +=
                        AdamantEndToEndTests.metric((try? await herald.metrics()) ?? "", #"herald_adamant_signals_total{result="add"}"#)
                        ?? 0
                }
                return applied == 1
            })
        var sent = [try node.addChat(from: sender, to: user).id]
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 1 })
        #expect(try await Self.thePoller(among: instances) != nil)

        try postgres.crash()
        sent.append(try node.addChat(from: sender, to: user).id)  // while the database is down
        sent.append(node.addTransfer(from: sender, to: user.address).id)
        try postgres.restart()
        for _ in 0..<5 { sent.append(try node.addChat(from: sender, to: user).id) }
        #expect(try await AdamantEndToEndTests.eventually { Set(ids(apns)) == Set(sent) })
        let poller = try await Self.thePoller(among: instances)
        #expect(poller != nil, "one instance polls after the crash, not two")
        if let poller { #expect(try await instances[poller].settled(at: node.height)) }
        for herald in instances { await herald.kill(SIGTERM) }
        await node.stop()
        await apns.stop()
        await dev.stop()
        #expect(ids(apns).count == sent.count, "pushed twice: \(ids(apns).count - Set(ids(apns)).count)")
        for herald in instances { #expect(herald.process.terminationStatus == 0, "\(herald.output)") }
    }
}
