import AdamantAdapter
import Foundation
import HeraldTestSupport
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

        static func launch(_ binary: String, config: String, log: String) throws -> Herald {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let process = try ChildProcess.launch(binary, ["serve", "--config", config], error: log)
            return Herald(process: process, log: log)
        }

        var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

        /// Sends `signal` and waits for the process to end.
        func kill(_ signal: Int32) async { await process.stop(signal) }
    }

    func config(_ dir: String, node: FakeAdamantNode, apns: FakeAPNs, dev: FakeAPNs, store: String) throws -> String {
        let port = StatusDurabilityTests.freePort()
        let yaml = AdamantEndToEndTests.config(
            directory: dir, nodes: [node.baseURL], production: apns, development: dev, store: store, extra: "lease_retry: 0.2"
        )
        .replacingOccurrences(of: "port: 0\n", with: "port: \(port)\n")
        .replacingOccurrences(of: "  prometheus:\n    enabled: true", with: "  prometheus:\n    enabled: false")
        let path = "\(dir)/herald-\(port).yaml"
        try ("log:\n  level: notice\n" + yaml).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func ids(_ apns: FakeAPNs) -> [String] { apns.received.compactMap { $0.payload?["txn-id"]?.stringValue } }

    /// Waits until the PostgreSQL store holds the pushed key (the push is committed).
    func committed(store url: String, key: String) async throws -> Bool {
        let store = try PostgresAdamantStore(url: url, logger: Logger(label: "test"))
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
        try await Task.sleep(for: .milliseconds(300))
        let one = try node.addChat(from: sender, to: user)
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 1 })
        // Between polls: the push is committed (read from the store itself).
        let store = try SQLiteAdamantStore(path: "\(dir)/adamant.sqlite")
        #expect(try await AdamantEndToEndTests.eventually { try await !store.pushed(among: ["\(one.id):apns:\(token)"]).isEmpty })
        await store.close()
        await first.kill(SIGKILL)

        let two = try node.addChat(from: sender, to: user)  // while no Herald runs
        let second = try Herald.launch(binary, config: path, log: "\(dir)/second.log")
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 2 })
        let three = try node.addChat(from: sender, to: user)
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 3 })
        try await Task.sleep(for: .milliseconds(300))
        await second.kill(SIGTERM)
        await node.stop()
        await apns.stop()
        await dev.stop()
        #expect(ids(apns) == [one.id, two.id, three.id])
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
        try await Task.sleep(for: .milliseconds(500))
        let token = AdamantEndToEndTests.token()
        try node.addSignal(from: user, to: service, token: token)
        try await Task.sleep(for: .milliseconds(300))
        let one = try node.addChat(from: sender, to: user)
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 1 })
        #expect(!follower.output.contains("ADAMANT polling lease taken"))  // one instance polls
        #expect(try await committed(store: store, key: "\(one.id):apns:\(token)"))
        await leader.kill(SIGKILL)

        let two = try node.addChat(from: sender, to: user)
        let killed = ContinuousClock.now
        #expect(try await AdamantEndToEndTests.eventually { ids(apns).count == 2 })
        #expect(ContinuousClock.now - killed < .seconds(5))  // taken over within seconds
        #expect(follower.output.contains("ADAMANT polling lease taken"))
        try await Task.sleep(for: .milliseconds(300))
        await follower.kill(SIGTERM)
        await node.stop()
        await apns.stop()
        await dev.stop()
        #expect(ids(apns) == [one.id, two.id])
    }
}
