import AdamantAdapter
import Crypto
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// The ADAMANT notification service through real sockets: a device's signal and its messages
/// appear on a fake node, Herald polls it and wakes the device through the fake APNs of its
/// environment (docs/adamant.md).
@Suite struct AdamantEndToEndTests {
    static let topic = "im.adamant.adamant-messenger"
    static let servicePassphrase = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

    struct Setup {
        let herald: RunningGateway
        let nodes: [FakeAdamantNode]
        let production: FakeAPNs
        let development: FakeAPNs
        let service: AdamantKeys
        let directory: String

        var node: FakeAdamantNode { nodes[nodes.count - 1] }

        func stop() async {
            await herald.stop()
            for node in nodes { await node.stop() }
            await production.stop()
            await development.stop()
        }
    }

    static func config(
        directory: String, nodes: [String], production: FakeAPNs, development: FakeAPNs, store: String? = nil, extra: String = "",
        startup: String = "initial\n  start_height: 0"
    ) -> String {
        let apps = """
              com.example.adamant:
                type: apns
                keyfile: \(directory)/AuthKey.p8
                key_id: ABC123DEFG
                team_id: TEAM123456
                topic: \(topic)
                base_url: \(production.baseURL)
                tls_ca_file: \(directory)/ca.pem
                max_attempts: 2
                retry_initial_backoff: 0.01

            """
        let adamant = """
            adamant:
              nodes: [\(nodes.map { "'\($0)'" }.joined(separator: ", "))]
              passphrase_file: \(directory)/passphrase
              apns_app: com.example.adamant
              development_base_url: \(development.baseURL)
              poll_interval: 0.05
              signal_poll_interval: 0.05
              max_backoff: 0.2
              startup: \(startup)
              store: \(store ?? "\(directory)/adamant.sqlite")
            \(extra.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            """
        return gatewayYAML(apps: apps, extra: adamant)
    }

    static func fakes(directory: String) async throws -> (FakeAPNs, FakeAPNs) {
        let pki = try TestPKI(directory: directory)
        #expect(pki.caFile == "\(directory)/ca.pem")
        try servicePassphrase.write(toFile: "\(directory)/passphrase", atomically: true, encoding: .utf8)
        let auth = try APNsTestKey(directory: directory).auth
        return (try await FakeAPNs.start(pki: pki, topic: topic, auth: auth), try await FakeAPNs.start(pki: pki, topic: topic, auth: auth))
    }

    func start(nodeCount: Int = 1, extra: String = "", clock: any HeraldClock = SystemClock()) async throws -> Setup {
        let dir = temporaryDirectory()
        let (production, development) = try await Self.fakes(directory: dir)
        var nodes: [FakeAdamantNode] = []
        for _ in 0..<nodeCount { nodes.append(try await FakeAdamantNode.start()) }
        let herald = try await RunningGateway.start(
            Self.config(directory: dir, nodes: nodes.map(\.baseURL), production: production, development: development, extra: extra),
            clock: clock)
        return Setup(
            herald: herald, nodes: nodes, production: production, development: development,
            service: try AdamantKeys(passphrase: Self.servicePassphrase), directory: dir)
    }

    static func user() throws -> AdamantKeys { try AdamantKeys(seed: (0..<32).map { _ in UInt8.random(in: 0...255) }) }
    static func token() -> String { Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255) }) }

    /// Waits for `condition`, checking every 25 ms, for at most 60 s: long enough for a loaded
    /// machine, and it ends as soon as the condition holds.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        try await HeraldTestSupport.eventually(condition)
    }

    /// A labelled series' value in Prometheus text, nil when it is not there.
    static func metric(_ text: String, _ series: String) -> Double? {
        let prefix = series + " "
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
    }

    static let workers = ["signals", "chats", "transfers"]

    /// Waits until every poller has read the chain up to below `height`'s block and then polled
    /// twice more: whatever those polls would push (or push again) has been pushed. An event to wait
    /// on instead of a pause.
    static func settled(_ metrics: () async throws -> String, at height: Int64) async throws -> Bool {
        var baseline: [String: Double]?
        return try await eventually {
            let text = try await metrics()
            let cursors = workers.map { metric(text, #"herald_adamant_cursor_height{worker="\#($0)"}"#) ?? -1 }
            guard cursors.allSatisfy({ $0 >= Double(height - 1) }) else { return false }
            let polls = Dictionary(
                uniqueKeysWithValues: workers.map { ($0, metric(text, #"herald_adamant_polls_total{worker="\#($0)"}"#) ?? 0) })
            guard let start = baseline else {
                baseline = polls
                return false
            }
            return workers.allSatisfy { (polls[$0] ?? 0) >= (start[$0] ?? 0) + 2 }
        }
    }

    static func settled(_ herald: RunningGateway, at height: Int64) async throws -> Bool {
        try await settled({ try await herald.metricsText() }, at: height)
    }

    static func nodeFailures(_ herald: RunningGateway) async throws -> Double {
        metric(try await herald.metricsText(), "herald_adamant_node_failures_total") ?? 0
    }

    static func signals(_ herald: RunningGateway, _ result: String) async throws -> Int {
        let text = try await herald.metricsText()
        let prefix = #"herald_adamant_signals_total{result="\#(result)"} "#
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
    }

    @Test func aRegisteredDeviceIsWokenForMessagesAndTransfersUntilItUnregisters() async throws {
        let setup = try await start()
        let user = try Self.user()
        let sender = try Self.user()
        let token = Self.token()
        try setup.node.addSignal(from: user, to: setup.service, token: token)
        #expect(try await Self.eventually { try await Self.signals(setup.herald, "add") == 1 })

        let chat = try setup.node.addChat(from: sender, to: user)
        #expect(try await Self.eventually { setup.production.received.count == 1 })
        let transfer = setup.node.addTransfer(from: sender, to: user.address)
        #expect(try await Self.eventually { setup.production.received.count == 2 })
        try setup.node.addChat(from: user, to: sender)  // the sender is never notified of its own messages
        try setup.node.addSignal(from: user, to: setup.service, token: token, action: "remove")
        #expect(try await Self.eventually { try await Self.signals(setup.herald, "remove") == 1 })
        try setup.node.addChat(from: sender, to: user)
        #expect(try await Self.settled(setup.herald, at: setup.node.height))
        // Answerable by the transaction's id, and by the device token across its transactions.
        let byTransaction = try await setup.herald.deliveries(event: chat.id)
        let byToken = try await setup.herald.deliveries(pushkey: token)
        await setup.stop()
        #expect(byTransaction.count == 1 && byTransaction.first?["front_end"] == "adamant")
        #expect(byTransaction.first?["outcome"] == "delivered" && byTransaction.first?["attempts"] == 1)
        #expect(byToken.compactMap { $0["event_id"]?.stringValue } == [chat.id, transfer.id])

        let received = setup.production.received
        #expect(received.count == 2)
        #expect(setup.development.received.isEmpty)
        let first = try #require(received.first)
        #expect(first.token == token)
        #expect(
            first.payload
                == [
                    "aps": [
                        "alert": ["loc-key": "NotificationsService.NewMessage.BodySingle"], "badge": 1, "sound": "notification.mp3",
                        "mutable-content": 1,
                    ],
                    "txn-id": .string(chat.id), "push-recipient": .string(user.address),
                ])
        #expect(first.headers["apns-topic"] == Self.topic)
        #expect(first.headers["apns-push-type"] == "alert")
        #expect(first.headers["apns-priority"] == "10")
        #expect(first.headers["apns-expiration"] == "0")
        #expect(first.headers["apns-collapse-id"] == nil)
        #expect(received.last?.payload?["aps"]?["alert"]?["loc-key"] == "NotificationsService.NewTransfer.BodySingle")
        #expect(received.last?.payload?["txn-id"] == .string(transfer.id))
    }

    /// docs/architecture.md, "Time": the pollers wait on the gateway's clock. With a manual clock,
    /// what the chain gets while all three wait is read only once the clock passes their interval.
    @Test func thePollersWaitOnTheClockAndPollWhenItPassesTheirInterval() async throws {
        let clock = ManualClock()
        let setup = try await start(clock: clock)
        let user = try Self.user()
        let token = Self.token()
        // Each poller polls once at start, then waits on the clock.
        #expect(try await Self.eventually { clock.sleepers == 3 })
        try setup.node.addSignal(from: user, to: setup.service, token: token, provider: "apns-sandbox")
        #expect(try await Self.signals(setup.herald, "add") == 0)  // nobody polls while time stands still
        clock.advance(by: .milliseconds(50))
        #expect(try await Self.eventually { try await Self.signals(setup.herald, "add") == 1 })
        #expect(try await Self.eventually { clock.sleepers == 3 })
        try setup.node.addChat(from: try Self.user(), to: user)
        #expect(setup.development.received.isEmpty)
        clock.advance(by: .milliseconds(50))
        #expect(try await Self.eventually { setup.development.received.count == 1 })
        await setup.stop()
        #expect(setup.development.received.first?.token == token)
    }

    @Test func sandboxRegistrationsGoToTheDevelopmentHostAndDeadTokensAreRemoved() async throws {
        let setup = try await start()
        let user = try Self.user()
        let sender = try Self.user()
        let token = Self.token()
        try setup.node.addSignal(from: user, to: setup.service, token: token, provider: "apns-sandbox")
        try setup.node.addSignal(from: user, to: setup.service, token: "zz-not-hex")  // skipped, never stops the poller
        #expect(try await Self.eventually { try await Self.signals(setup.herald, "add") == 1 })
        setup.development.script(token, .sequence([.accept, .fail(410, "Unregistered")]))
        try setup.node.addChat(from: sender, to: user)
        #expect(try await Self.eventually { setup.development.received.count == 1 })
        try setup.node.addChat(from: sender, to: user)
        #expect(try await Self.eventually { setup.development.received.count == 2 })
        try setup.node.addChat(from: sender, to: user)
        #expect(try await Self.settled(setup.herald, at: setup.node.height))
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(metrics.contains(#"herald_adamant_height_lag{worker="chats"}"#))
        #expect(metrics.contains(#"herald_adamant_poll_failures_total{worker="signals"} 0"#))
        #expect(setup.development.received.count == 2)  // removed after the 410: the third is not sent
        #expect(setup.production.received.isEmpty)
        #expect(metrics.contains("herald_adamant_tokens_removed_total 1"))
        // Counted by the dispatcher under the app's shared development-host sender.
        let hostSender = "com.example.adamant (\(setup.development.baseURL))"
        #expect(metrics.contains(#"herald_rejected_pushkeys_total{pushkin="\#(hostSender)"} 1"#))
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="\#(hostSender)",outcome="delivered",reason=""} 1"#))
        #expect(metrics.contains(#"herald_adamant_signals_total{result="invalid"} 1"#))
    }

    @Test func failingNodesAreRotatedAndBackedOffWithoutStoppingThePollers() async throws {
        let setup = try await start(nodeCount: 2)
        setup.nodes[0].setHealth(.garbage)
        let user = try Self.user()
        let sender = try Self.user()
        let token = Self.token()
        // Both nodes hold the same chain: the healthy one answers for the broken one.
        for node in setup.nodes { try node.addSignal(from: user, to: setup.service, token: token) }
        #expect(try await Self.eventually { try await Self.signals(setup.herald, "add") == 1 })
        for health in [FakeAdamantNode.Health.successFalse, .http500] {
            setup.nodes[1].setHealth(health)
            setup.nodes[0].setHealth(health)
            let failures = try await Self.nodeFailures(setup.herald)
            #expect(try await Self.eventually { try await Self.nodeFailures(setup.herald) >= failures + 2 })
            setup.nodes[1].setHealth(.healthy)
        }
        let chat = try setup.nodes[1].addChat(from: sender, to: user)
        #expect(try await Self.eventually { setup.production.received.count == 1 })
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(setup.production.received.first?.payload?["txn-id"] == .string(chat.id))
        let failures = metrics.split(separator: "\n").first { $0.hasPrefix("herald_adamant_node_failures_total ") }
        #expect((failures.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0) >= 3)
    }

    @Test func aRestartOnTheSameStoreNeitherMissesNorRepeatsAPush() async throws {
        let dir = temporaryDirectory()
        let (production, development) = try await Self.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let service = try AdamantKeys(passphrase: Self.servicePassphrase)
        let yaml = Self.config(directory: dir, nodes: [node.baseURL], production: production, development: development)
        let user = try Self.user()
        let sender = try Self.user()
        let first = try await RunningGateway.start(yaml)
        try node.addSignal(from: user, to: service, token: Self.token())
        #expect(try await Self.eventually { try await Self.signals(first, "add") == 1 })
        try node.addChat(from: sender, to: user)
        #expect(try await Self.eventually { production.received.count == 1 })
        await first.stop()

        let missed = try node.addChat(from: sender, to: user)  // while Herald is down
        let second = try await RunningGateway.start(yaml)
        #expect(try await Self.eventually { production.received.count >= 2 })
        let later = try node.addChat(from: sender, to: user)
        #expect(try await Self.eventually { production.received.count >= 3 })
        #expect(try await Self.settled(second, at: node.height))
        await second.stop()
        await node.stop()
        await production.stop()
        await development.stop()
        #expect(production.received.count == 3)
        #expect(production.received.dropFirst().compactMap { $0.payload?["txn-id"]?.stringValue } == [missed.id, later.id])
    }

    static var stores: [String] { ["sqlite"] + (TestPostgres.url == nil ? [] : ["postgres"]) }

    /// What reaches the chain while Herald is down is pushed once it runs again, for every poller,
    /// also one that had not yet seen a transaction of its own before the stop (it stored where it
    /// started): with the default `startup: database`, on both stores.
    @Test(arguments: stores)
    func whatTheChainGetsWhileHeraldIsDownIsPushedAfterItStarts(_ backend: String) async throws {
        let dir = temporaryDirectory()
        let (production, development) = try await Self.fakes(directory: dir)
        let node = try await FakeAdamantNode.start()
        let service = try AdamantKeys(passphrase: Self.servicePassphrase)
        let store = backend == "sqlite" ? "\(dir)/adamant.sqlite" : try await TestPostgres.createDatabase(prefix: "adamant")
        let yaml = Self.config(
            directory: dir, nodes: [node.baseURL], production: production, development: development, store: store, startup: "database")
        let (user, later, sender) = (try Self.user(), try Self.user(), try Self.user())
        let (token, laterToken) = (Self.token(), Self.token())

        let first = try await RunningGateway.start(yaml)
        // A fresh store starts at the chain's height: the signal comes after the pollers started.
        #expect(try await Self.settled(first, at: node.height))
        try node.addSignal(from: user, to: service, token: token)
        #expect(try await Self.eventually { try await Self.signals(first, "add") == 1 })
        let before = try node.addChat(from: sender, to: user)
        #expect(try await Self.eventually { production.received.count == 1 })
        #expect(try await Self.settled(first, at: node.height))
        await first.stop()

        // While no Herald runs: a chat and a transfer to the registered device, and a new device.
        let chat = try node.addChat(from: sender, to: user)
        let transfer = node.addTransfer(from: sender, to: user.address)
        try node.addSignal(from: later, to: service, token: laterToken)
        let second = try await RunningGateway.start(yaml)
        #expect(try await Self.eventually { try await Self.signals(second, "add") == 1 })
        let after = try node.addChat(from: sender, to: later)
        #expect(try await Self.eventually { production.received.count >= 4 })
        #expect(try await Self.settled(second, at: node.height))
        await second.stop()
        await node.stop()
        await production.stop()
        await development.stop()

        let ids = { (token: String) in production.received(token: token).compactMap { $0.payload?["txn-id"]?.stringValue } }
        #expect(ids(token) == [before.id, chat.id, transfer.id] || ids(token) == [before.id, transfer.id, chat.id])
        #expect(ids(laterToken) == [after.id])
    }

    @Test func aBacklogOfManyFullPagesIsPushedExactlyOnce() async throws {
        let setup = try await start()
        let user = try Self.user()
        let sender = try Self.user()
        try setup.node.addSignal(from: user, to: setup.service, token: Self.token())
        #expect(try await Self.eventually { try await Self.signals(setup.herald, "add") == 1 })
        var ids: Set<String> = []
        for n in 0..<250 {
            ids.insert(try setup.node.addChat(from: sender, to: user, text: String(repeating: "x", count: 200), newBlock: n % 10 == 0).id)
        }
        #expect(try await Self.eventually { setup.production.received.count >= 250 })
        #expect(try await Self.settled(setup.herald, at: setup.node.height))
        await setup.stop()
        let pushed = setup.production.received.compactMap { $0.payload?["txn-id"]?.stringValue }
        #expect(pushed.count == 250)
        #expect(Set(pushed) == ids)
    }

    @Test func unavailableAPNsKeepsTheCursorUntilThePushGoesThrough() async throws {
        let setup = try await start()
        let user = try Self.user()
        let sender = try Self.user()
        let token = Self.token()
        let other = Self.token()
        try setup.node.addSignal(from: user, to: setup.service, token: token)
        try setup.node.addSignal(from: user, to: setup.service, token: other)
        #expect(try await Self.eventually { try await Self.signals(setup.herald, "add") == 2 })
        // One device's APNs answers 503 for a while: the other is pushed once, the failing one
        // again on later polls until it goes through.
        setup.production.script(
            token,
            .sequence([.fail(503, "ServiceUnavailable"), .fail(503, "ServiceUnavailable"), .fail(503, "ServiceUnavailable"), .accept]))
        let chat = try setup.node.addChat(from: sender, to: user)
        #expect(try await Self.eventually { setup.production.received(token: token).contains { $0.status == 200 } })
        #expect(try await Self.settled(setup.herald, at: setup.node.height))
        await setup.stop()
        #expect(setup.production.received(token: other).count == 1)
        #expect(setup.production.received(token: token).filter { $0.status == 200 }.count == 1)
        #expect(setup.production.received(token: token).allSatisfy { $0.payload?["txn-id"] == .string(chat.id) })
    }
}
