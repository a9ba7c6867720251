import AdamantAdapter
import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import NIOCore
import Pushkins
import StatusAdapter
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fleet under load while it is broken (docs/scaling.md, "The chaos test"): three `herald`
/// processes on one PostgreSQL behind HAProxy, the fake APNs, FCM, Web Push and ADAMANT node
/// behind them. Through the load balancer, at the same time: Matrix notifies from a client that
/// behaves like Synapse, Status registrations, gorush batches, and ADAMANT chats minted on the
/// fake node. Meanwhile a random instance is SIGKILLed and started again every few seconds,
/// PostgreSQL is SIGKILLed and restarted 6 s later, later stopped (SIGSTOP: its connections stay
/// open and nothing answers, as behind a failover) and resumed 6 s later, and every instance is
/// restarted in turn with the reuse-port hand-over. Then nothing acknowledged may be missing.
@Suite(.serialized) struct FleetChaosTests {
    static var haproxy: String? { ["/usr/sbin/haproxy", "/usr/bin/haproxy"].first { FileManager.default.isExecutableFile(atPath: $0) } }
    /// Run by scripts/test.sh on its own (HERALD_CHAOS=1), after the rest of the suite.
    static var enabled: Bool {
        ProcessInfo.processInfo.environment["HERALD_CHAOS"] == "1" && StatusDurabilityTests.heraldBinary != nil
            && ThrowawayPostgres.available && haproxy != nil
    }
    /// Seconds of load (HERALD_CHAOS_SECONDS, default 60).
    static var seconds: Int { ProcessInfo.processInfo.environment["HERALD_CHAOS_SECONDS"].flatMap(Int.init) ?? 60 }

    /// What the clients saw and what the fleet went through.
    struct Ledger: Sendable {
        var notifiesSent: [String] = []
        var notifiesAcknowledged: Set<String> = []
        var notifiesGivenUp: [String] = []
        var notifyAnswers: [Int: Int] = [:]
        /// Notifies one of whose tries ended in a broken connection: its instance may have written
        /// the 200 (and the record taken it as heard) just before it was killed.
        var notifiesCut: Set<String> = []
        var gorushAcknowledged: [String] = []
        var gorushAnswers: [Int: Int] = [:]
        var registrationsAcknowledged: [StatusTestClient] = []
        var statusAnswers: [Int: Int] = [:]
        var chatsMinted: [String] = []
        var kills = 0
        var restartsInPlace = 0
        var databaseCrashes = 0
        /// PostgreSQL stopped (SIGSTOP) and resumed.
        var databaseFreezes = 0
        /// From PostgreSQL's crash, and from its stop, until every /health was clear again: the
        /// delivery record's memory stood in (docs/operations.md, "When a push can arrive twice").
        var outages: [(start: ContinuousClock.Instant, end: ContinuousClock.Instant)] = []
        /// Each notify's first attempt and the end of its last.
        var notifyWindows: [String: (first: ContinuousClock.Instant, last: ContinuousClock.Instant)] = [:]
        /// The same, on the wall clock the instances' log lines carry.
        var notifyDates: [String: (first: Date, last: Date)] = [:]
        /// Instances whose /health named the Status store during each outage (the crash's, the stop's).
        var healthNamedStore: [Int] = []
        /// Whole seconds (rounded up) from PostgreSQL's restart (or resumption) until every /health
        /// was empty again, for each outage; nil where not within 30 s.
        var recoverySeconds: [Double?] = []
        var sigtermExits: [Int32] = []
        /// The end of the log of each instance that exited other than 0 on SIGTERM.
        var badExits: [String] = []
        /// The services named as having held a SIGTERM's shutdown past its grace period (docs/operations.md, "Shutdown").
        var heldUp: [String] = []
    }

    final class LedgerBox: Sendable {
        let state = Mutex(Ledger())
    }

    /// One Herald process of the fleet, on its own port; `generation` counts its restarts.
    final class Instance: Sendable {
        let index: Int
        let port: Int
        let config: String
        let directory: String
        let process = Mutex<AdamantDurabilityTests.Herald?>(nil)
        let generation = Mutex(0)

        init(index: Int, port: Int, config: String, directory: String) {
            self.index = index
            self.port = port
            self.config = config
            self.directory = directory
        }

        /// Starts a new process for this instance; returns once it answers `/health`.
        @discardableResult
        func start(_ binary: String) async throws -> AdamantDurabilityTests.Herald {
            let n = generation.withLock {
                $0 += 1; return $0
            }
            let herald = try AdamantDurabilityTests.Herald.launch(binary, config: config, log: "\(directory)/herald-\(index)-\(n).log")
            let previous = process.withLock { old -> AdamantDurabilityTests.Herald? in
                defer { old = herald }
                return old
            }
            _ = previous
            try await StatusDurabilityTests().waitForHealth(port: port)
            return herald
        }

        var current: AdamantDurabilityTests.Herald? { process.withLock { $0 } }
    }

    /// The fleet recipe's own config (`scripts/fleet.sh config`, docs/deployment.md "A fleet"),
    /// for this test's fakes: they are described in a `fakes.json` as `herald-fakes` writes it,
    /// and the recipe writes instance `index`'s file from it, which the test runs unchanged.
    static func config(
        index: Int, port: Int, metricsPort: Int, directory dir: String, apns: FakeAPNs, fcm: FakeFCM, node: FakeAdamantNode,
        postgres: String, pki: TestPKI
    ) async throws -> String {
        let fakes: JSONValue = [
            "apns": [
                "base_url": .string(apns.baseURL), "ca_file": .string(pki.caFile), "keyfile": .string("\(dir)/AuthKey.p8"),
                "key_id": "ABC123DEFG", "team_id": "TEAM123456", "topic": "im.status.ethereum",
            ],
            "fcm": [
                "base_url": .string(fcm.baseURL), "project_id": .string(fcm.projectId),
                "service_account_file": .string(fcm.serviceAccountFile),
            ],
            "adamant": ["node": .string(node.baseURL), "passphrase_file": .string("\(dir)/passphrase")],
        ]
        try FileManager.default.createDirectory(atPath: "\(dir)/fakes", withIntermediateDirectories: true)
        try JSONWriter.string(fakes).write(toFile: "\(dir)/fakes/fakes.json", atomically: true, encoding: .utf8)
        return try await recipe(["config", "\(index)", postgres, "\(port)", "\(metricsPort)"], fleetDirectory: dir)
    }

    /// What `scripts/fleet.sh ARGUMENTS` prints, with `FLEET_DIR` set.
    static func recipe(_ arguments: [String], fleetDirectory: String) async throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let pipe = Pipe()
        let process = try ChildProcess.launch(
            "/usr/bin/env", ["FLEET_DIR=\(fleetDirectory)", "bash", root.appendingPathComponent("scripts/fleet.sh").path] + arguments,
            outputDescriptor: pipe.fileHandleForWriting.fileDescriptor)
        try pipe.fileHandleForWriting.close()
        // Read and waited for on threads of their own, not the cooperative pool's (ChildProcess.exit).
        let reader = pipe.fileHandleForReading
        let data = await offPool { reader.readDataToEndOfFile() }
        let status = await process.exit()
        guard status == 0 else { throw RecipeFailed(status: status) }
        return String(decoding: data, as: UTF8.self)
    }

    struct RecipeFailed: Error {
        let status: Int32
    }

    /// `abortOnClose`: the recipe's `option abortonclose`; without it, HAProxy's default, a client
    /// that gives up leaves the connection to the instance open (docs/deployment.md, "A fleet").
    static func haproxyConfig(port: Int, instances: [Instance], directory: String, abortOnClose: Bool = true) -> String {
        """
        global
          maxconn 4096
          log stderr format raw local0 info
        defaults
          mode http
          log global
          timeout connect 2s
          timeout client 90s
          timeout server 90s
          retries 3
          retry-on conn-failure empty-response
          option redispatch
        \(abortOnClose ? "  option abortonclose\n" : "")frontend herald
          bind 127.0.0.1:\(port)
          # Which notify each request was, and whether the balancer sent it again (`retries=+1`).
          http-request capture req.hdr(X-Chaos-Try) len 64
          log-format "chaos-try %[capture.req.hdr(0)] retries=%rc server=%s status=%ST"
          default_backend heralds
        backend heralds
          balance roundrobin
          option httpchk GET /health
          http-check expect status 200
          default-server inter 300ms fall 1 rise 1
        \(instances.map { "  server herald\($0.index) 127.0.0.1:\($0.port) check" }.joined(separator: "\n"))

        """
    }

    /// What an instance that did not exit 0 logged last before it ended, and the head of its crash
    /// report, if any (the backtrace's registers and images say nothing of which service waited).
    static func exitReport(_ output: String) -> String {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        guard let crash = lines.firstIndex(where: { $0.contains("Program crashed") || $0.contains("Fatal error") }) else {
            return lines.suffix(40).joined(separator: "\n")
        }
        return (lines[..<crash].suffix(40) + lines[crash...].prefix(16)).joined(separator: "\n")
    }

    /// The services an instance's log names as not stopped within the shutdown grace period.
    static func heldUp(_ output: String) -> [String] {
        output.split(separator: "\n").filter { $0.contains("Did not stop within the shutdown grace period") }.compactMap { line in
            line.range(of: "service=").map { String(line[$0.upperBound...].prefix { $0 != " " }) }
        }
    }

    /// The notifies the balancer sent again to another instance after the first closed the
    /// connection without an answer (its log's `retries=` is not 0; `haproxyConfig`).
    static func resentByTheBalancer(log path: String) -> Set<String> {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var ids = Set<String>()
        for line in text.split(separator: "\n") where line.hasPrefix("chaos-try ") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3, fields[2].hasPrefix("retries="), fields[2] != "retries=0" else { continue }
            ids.insert(String(fields[1]))
        }
        return ids
    }

    /// The delivery keys whose claims an instance took over from a killed one (their log lines,
    /// docs/operations.md, "Once"), across every instance's logs in `directory`.
    static func takenOver(directory: String) -> Set<String> {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var keys = Set<String>()
        for file in files where file.hasPrefix("herald-") && file.hasSuffix(".log") {
            let text = (try? String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.contains("Took over the claim") {
                if let key = line.range(of: "key=") { keys.insert(String(line[key.upperBound...].prefix { $0 != " " })) }
            }
        }
        return keys
    }

    /// When an instance logged that the shared delivery record could not be read or written in
    /// time, and its memory stood in (whole seconds, as the log lines carry them).
    static func memoryStoodIn(directory: String) -> [Date] {
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var dates: [Date] = []
        for file in files where file.hasPrefix("herald-") && file.hasSuffix(".log") {
            let text = (try? String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.contains("memory stands in") {
                if let stamp = line.split(separator: " ").first, let date = format.date(from: String(stamp)) { dates.append(date) }
            }
        }
        return dates
    }

    /// The lines of the instances' logs that name one of `needles` (an event id, a delivery key),
    /// each with its file: what a failure shows of a notify delivered twice.
    static func logLines(directory: String, mentioning needles: [String]) -> String {
        guard !needles.isEmpty else { return "" }
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        var found: [String] = []
        for file in files where file.hasPrefix("herald-") && file.hasSuffix(".log") {
            let text = (try? String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where needles.contains(where: { line.contains($0) }) {
                found.append("\(file): \(line.prefix(400))")
            }
        }
        return found.prefix(40).joined(separator: "\n")
    }

    /// The delivery key of a chaos notify (its event, app and pushkey), as Herald's record has it.
    static func deliveryKey(_ id: String, subscription: FakeWebPushService.Subscription) -> String {
        let device: Device
        switch Int(id.split(separator: "-").last ?? "") ?? 0 {
        case let n where n % 3 == 0: device = Device(appId: "com.example.apns", pushkey: apnsPushkey(id))
        case let n where n % 3 == 1: device = Device(appId: "com.example.fcm", pushkey: "fcm-\(id)")
        default:
            device = Device(
                appId: "com.example.webpush", pushkey: subscription.p256dh,
                data: ["endpoint": .string(subscription.endpoint), "auth": .string(subscription.auth)])
        }
        return Dispatcher.key(event: id, device).digest
    }

    /// POSTs `body`, named by `tag` in the balancer's log; the status, or nil when no answer came
    /// (a broken connection).
    static func post(_ url: String, _ body: [UInt8], tag: String? = nil) async -> (status: Int, body: [UInt8])? {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        if let tag { request.headers.add(name: "X-Chaos-Try", value: tag) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(90))
            let collected = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), Array(collected.readableBytesView))
        } catch {
            return nil
        }
    }

    /// Sends until an answer that is not a 5xx nor a broken connection, backing off as Synapse and
    /// status-go do (0.1 s doubling to 2 s), for at most 90 s; the last status (nil: none).
    static func withRetries(
        _ url: String, _ body: [UInt8], tag: String? = nil, answers: @escaping @Sendable (Int?) -> Void
    ) async -> (status: Int, body: [UInt8])? {
        var pause = Duration.milliseconds(100)
        let giveUp = ContinuousClock.now + .seconds(90)
        while true {
            let answer = await post(url, body, tag: tag)
            answers(answer?.status)
            if let answer, answer.status < 500 { return answer }
            if ContinuousClock.now + pause > giveUp { return answer }
            try? await letRealTimePass(pause)
            pause = min(pause * 2, .seconds(2))
        }
    }

    @Test(
        .enabled(if: enabled, "HERALD_CHAOS=1, the herald executable, root (PostgreSQL) and haproxy"), .timeLimit(.minutes(10)),
        arguments: [true, false])
    func aFleetUnderLoadSurvivesKillsADatabaseCrashAndARollingRestart(abortOnClose: Bool) async throws {
        let binary = try #require(StatusDurabilityTests.heraldBinary)
        let haproxy = try #require(Self.haproxy)
        let dir = temporaryDirectory()
        let (pki, apns) = try await StatusDurabilityTests.fakeAPNs(directory: dir)
        let fcm = try await FakeFCM.start(directory: dir)
        let webpush = try await FakeWebPushService.start()
        let node = try await FakeAdamantNode.start()
        try AdamantEndToEndTests.servicePassphrase.write(toFile: "\(dir)/passphrase", atomically: true, encoding: .utf8)
        let postgres = try ThrowawayPostgres.start()
        defer {
            try? postgres.thaw()  // a test that failed while it was stopped
            postgres.stop()
        }

        var built: [Instance] = []
        for i in 1...3 {
            let port = StatusDurabilityTests.freePort()
            let path = "\(dir)/herald-\(i).yaml"
            let yaml = try await Self.config(
                index: i, port: port, metricsPort: StatusDurabilityTests.freePort(), directory: dir, apns: apns, fcm: fcm, node: node,
                postgres: postgres.url, pki: pki)
            try yaml.write(toFile: path, atomically: true, encoding: .utf8)
            built.append(Instance(index: i, port: port, config: path, directory: dir))
        }
        let instances = built
        // Whatever ends the test (a thrown error too), no instance outlives it.
        defer { for instance in instances { instance.current?.process.stopInBackground(SIGKILL) } }
        for instance in instances { try await instance.start(binary) }
        let lbPort = StatusDurabilityTests.freePort()
        try Self.haproxyConfig(port: lbPort, instances: instances, directory: dir, abortOnClose: abortOnClose)
            .write(toFile: "\(dir)/haproxy.cfg", atomically: true, encoding: .utf8)
        let balancer = try ChildProcess.launch(haproxy, ["-db", "-f", "\(dir)/haproxy.cfg"], error: "\(dir)/haproxy.log")
        defer { balancer.stopInBackground(SIGTERM) }
        let base = "http://127.0.0.1:\(lbPort)"
        try await StatusDurabilityTests().waitForHealth(port: lbPort)

        // ADAMANT: one user registered before the load.
        let service = try AdamantKeys(passphrase: AdamantEndToEndTests.servicePassphrase)
        let (user, sender) = (try AdamantEndToEndTests.user(), try AdamantEndToEndTests.user())
        let adamantToken = AdamantEndToEndTests.token()
        try node.addSignal(from: user, to: service, token: adamantToken)
        // The Status server's identity, shared by the fleet through the store.
        let identityText = try #require(try await RunningGatewayClient.json("\(base)/_status/v1/identity")?["public_key"]?.stringValue)
        let server = try Secp256k1.PublicKey(bytes: try #require([UInt8](hex: identityText)))

        let ledger = LedgerBox()
        let loadEnds = ContinuousClock.now + .seconds(Self.seconds)
        let subscription = webpush.subscribe()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Matrix: three clients like Synapse, each notify to one device of APNs, FCM or Web Push.
            for worker in 0..<3 {
                group.addTask {
                    var n = 0
                    while ContinuousClock.now < loadEnds {
                        n += 1
                        let id = "$chaos-\(worker)-\(n)"
                        let device: JSONValue
                        switch n % 3 {
                        case 0: device = ["app_id": "com.example.apns", "pushkey": .string(Self.apnsPushkey(id))]
                        case 1: device = ["app_id": "com.example.fcm", "pushkey": .string("fcm-\(id)")]
                        default:
                            device = [
                                "app_id": "com.example.webpush", "pushkey": .string(subscription.p256dh),
                                "data": ["endpoint": .string(subscription.endpoint), "auth": .string(subscription.auth)],
                            ]
                        }
                        ledger.state.withLock { $0.notifiesSent.append(id) }
                        let body = JSONWriter.serialize(notifyBody(["event_id": .string(id)], devices: [device]))
                        let first = ContinuousClock.now
                        let firstDate = Date()
                        let answer = await Self.withRetries("\(base)/_matrix/push/v1/notify", body, tag: id) { status in
                            ledger.state.withLock {
                                $0.notifyAnswers[status ?? 0, default: 0] += 1
                                if status == nil { $0.notifiesCut.insert(id) }
                            }
                        }
                        ledger.state.withLock {
                            $0.notifyWindows[id] = (first, ContinuousClock.now)
                            $0.notifyDates[id] = (firstDate, Date())
                        }
                        ledger.state.withLock {
                            if answer?.status == 200 { $0.notifiesAcknowledged.insert(id) } else { $0.notifiesGivenUp.append(id) }
                        }
                        try? await letRealTimePass(.milliseconds(30))
                    }
                }
            }
            // gorush: batches of three iOS notifications, retried like status-go.
            group.addTask {
                var n = 0
                while ContinuousClock.now < loadEnds {
                    n += 1
                    let tokens = (0..<3).map { _ in AdamantEndToEndTests.token() }
                    let notifications: [JSONValue] = tokens.map {
                        ["tokens": [.string($0)], "platform": 1, "message": .string("chaos \(n)")]
                    }
                    let answer = await Self.withRetries("\(base)/api/push", JSONWriter.serialize(["notifications": .array(notifications)]))
                    {
                        status in ledger.state.withLock { $0.gorushAnswers[status ?? 0, default: 0] += 1 }
                    }
                    if answer?.status == 200 { ledger.state.withLock { $0.gorushAcknowledged += tokens } }
                    try? await letRealTimePass(.milliseconds(150))
                }
            }
            // Status: a new client registers every 200 ms.
            group.addTask {
                while ContinuousClock.now < loadEnds {
                    let client = StatusTestClient()
                    guard let message = try? client.registrationMessage(try client.registration(server: server), server: server) else {
                        continue
                    }
                    let answer = await Self.withRetries("\(base)/_status/v1/message", message) { status in
                        ledger.state.withLock { $0.statusAnswers[status ?? 0, default: 0] += 1 }
                    }
                    if let answer, answer.status == 200, let opened = try? StatusTestClient.open(answer.body),
                        let response = try? Protobuf_PushNotificationRegistrationResponse(serializedBytes: opened.payload), response.success
                    {
                        ledger.state.withLock { $0.registrationsAcknowledged.append(client) }
                    }
                    try? await letRealTimePass(.milliseconds(200))
                }
            }
            // ADAMANT: a chat to the registered user every 250 ms.
            group.addTask {
                while ContinuousClock.now < loadEnds {
                    if let chat = try? node.addChat(from: sender, to: user) { ledger.state.withLock { $0.chatsMinted.append(chat.id) } }
                    try? await letRealTimePass(.milliseconds(250))
                }
            }
            // The chaos: kills every 4 s; the database crash at 40 %; the database stopped at 55 %;
            // the rolling restart at 70 %.
            group.addTask {
                let started = ContinuousClock.now
                let total = Duration.seconds(Self.seconds)
                var crashed = false
                var frozen = false
                var rolled = false
                while ContinuousClock.now < loadEnds - .seconds(4) {
                    try await letRealTimePass(.seconds(4))
                    let elapsed = ContinuousClock.now - started
                    let crash = !crashed && elapsed > total * 0.4
                    if crash || (!frozen && elapsed > total * 0.55) {
                        if crash { crashed = true } else { frozen = true }
                        // Down, or silent, for longer than the store timeout (2 s): requests fail
                        // for now and are retried; a silent store is skipped after one timeout.
                        let down = ContinuousClock.now
                        if crash { try postgres.crash() } else { try postgres.freeze() }
                        try await letRealTimePass(.seconds(4))
                        var named = 0
                        for instance in instances {
                            let health = try? await Self.health(port: instance.port)
                            if health?.status == 200, health?.body["failing"]?["status_store"] != nil { named += 1 }
                        }
                        try await letRealTimePass(.seconds(2))
                        if crash { try postgres.restart() } else { try postgres.thaw() }
                        let back = ContinuousClock.now
                        // Recovered when every instance's /health is empty again (its stores answer).
                        var recovered = false
                        while !recovered && ContinuousClock.now - back < .seconds(30) {
                            var all = true
                            for instance in instances {
                                let health = try? await Self.health(port: instance.port)
                                if health?.status != 200 || health?.body != .null { all = false }
                            }
                            recovered = all
                            if !recovered { try await letRealTimePass(.milliseconds(100)) }
                        }
                        ledger.state.withLock {
                            if crash { $0.databaseCrashes += 1 } else { $0.databaseFreezes += 1 }
                            $0.healthNamedStore.append(named)
                            $0.recoverySeconds.append(recovered ? Double((ContinuousClock.now - back).components.seconds) + 1 : nil)
                            $0.outages.append((down, ContinuousClock.now))
                        }
                    } else if !rolled && elapsed > total * 0.7 {
                        rolled = true
                        for instance in instances {
                            guard let old = instance.current else { continue }
                            try await instance.start(binary)
                            await old.kill(SIGTERM)
                            ledger.state.withLock {
                                $0.sigtermExits.append(old.process.terminationStatus)
                                if old.process.terminationStatus != 0 { $0.badExits.append(Self.exitReport(old.output)) }
                                $0.heldUp += Self.heldUp(old.output)
                                $0.restartsInPlace += 1
                            }
                        }
                    } else if let victim = instances.randomElement(), let process = victim.current {
                        await process.kill(SIGKILL)
                        try await victim.start(binary)
                        ledger.state.withLock { $0.kills += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }

        // After the load: gorush jobs of killed workers come back when their claims run out (5 s).
        let final = ledger.state.withLock { $0 }
        let delivered = { () -> (notifies: [String], gorush: Set<String>, chats: [String]) in
            let apnsReceived = apns.received.filter { $0.status == 200 }
            var ids = apnsReceived.compactMap { $0.payload?["event_id"]?.stringValue }
            ids += fcm.received.filter { $0.status == 200 }.compactMap {
                $0.body?["message"]?["data"]?["event_id"]?.stringValue
            }
            ids += webpush.received.compactMap { $0.payload?["event_id"]?.stringValue }
            let chats = apnsReceived.filter { $0.token == adamantToken }.compactMap { $0.payload?["txn-id"]?.stringValue }
            return (ids, Set(apnsReceived.map(\.token)), chats)
        }
        let everything = try await AdamantEndToEndTests.eventually {
            let now = delivered()
            return final.notifiesAcknowledged.isSubset(of: Set(now.notifies)) && Set(final.gorushAcknowledged).isSubset(of: now.gorush)
                && Set(final.chatsMinted).isSubset(of: Set(now.chats))
        }
        // Status: every acknowledged registration is there (asked of the fleet, in batches).
        var registered = 0
        for batch in stride(from: 0, to: final.registrationsAcknowledged.count, by: 50) {
            let clients = final.registrationsAcknowledged[batch..<min(batch + 50, final.registrationsAcknowledged.count)]
            let query = try StatusTestClient.queryMessage(publicKeys: clients.map(\.hashedKey))
            let answer = await Self.withRetries("\(base)/_status/v1/message", query) { _ in }
            if let answer, let opened = try? StatusTestClient.open(answer.body),
                let infos = try? Protobuf_PushNotificationQueryResponse(serializedBytes: opened.payload).info
            {
                registered += Set(infos.map { [UInt8]($0.publicKey) }).intersection(Set(clients.map(\.hashedKey))).count
            }
        }
        for instance in instances {
            if let process = instance.current {
                await process.kill(SIGTERM)
                ledger.state.withLock {
                    $0.sigtermExits.append(process.process.terminationStatus)
                    if process.process.terminationStatus != 0 { $0.badExits.append(Self.exitReport(process.output)) }
                    $0.heldUp += Self.heldUp(process.output)
                }
            }
        }
        await apns.stop()
        await fcm.stop()
        await webpush.stop()
        await node.stop()

        let seen = delivered()
        let done = ledger.state.withLock { $0 }
        let notifyDuplicates = seen.notifies.count - Set(seen.notifies).count
        // Each notify delivered twice, and whether an instance took over its claim from a killed one.
        var counted: [String: Int] = [:]
        for id in seen.notifies { counted[id, default: 0] += 1 }
        let takenOver = Self.takenOver(directory: dir)
        let twice = counted.filter { $0.value > 1 }.keys
        let twiceAfterTakeover = twice.filter { takenOver.contains(Self.deliveryKey($0, subscription: subscription)) }.count
        // Sent while the shared record could not be reached: PostgreSQL down, or a statement slower
        // than `repeat_store_timeout` (an instance logs that its memory stands in), so that an
        // instance's memory stood in for it (docs/operations.md, "When a push can arrive twice").
        let fallbacks = Self.memoryStoodIn(directory: dir)
        let unreachable = Set(
            twice.filter { id in
                guard !takenOver.contains(Self.deliveryKey(id, subscription: subscription)) else { return false }
                if let window = done.notifyWindows[id],
                    done.outages.contains(where: { window.first <= $0.end + .seconds(2) && window.last >= $0.start })
                {
                    return true
                }
                guard let dates = done.notifyDates[id] else { return false }
                // The lines carry whole seconds.
                return fallbacks.contains { $0 >= dates.first - 1 && $0 <= dates.last + 1 }
            })
        let twiceDuringOutage = unreachable.count
        // Its instance killed as it answered 200: the record took the answer as heard, the client
        // never read it (docs/operations.md, "When a push can arrive twice": a 200 lost after it
        // was written).
        // The client saw the cut, or the balancer did and sent the request to another instance
        // (`retry-on empty-response`: its log says `retries=+1`), which found the 200 heard.
        let resent = Self.resentByTheBalancer(log: "\(dir)/haproxy.log")
        let twiceAfterACut = twice.filter { id in
            !takenOver.contains(Self.deliveryKey(id, subscription: subscription))
                && (done.notifiesCut.contains(id) || resent.contains(id)) && !unreachable.contains(id)
        }.count
        let twiceUnexplained = notifyDuplicates - twiceAfterTakeover - twiceDuringOutage - twiceAfterACut
        // Each duplicate with its notify's first and last try, in seconds from the database's crash,
        // so that a failure says which kind it is nearest to.
        let twiceTimes = twice.sorted().map { id -> String in
            guard let window = done.notifyWindows[id], let outage = done.outages.first else { return id }
            func seconds(_ instant: ContinuousClock.Instant) -> String {
                String(
                    format: "%.1f",
                    Double((instant - outage.start).components.attoseconds) / 1e18 + Double((instant - outage.start).components.seconds))
            }
            let cut = (done.notifiesCut.contains(id) ? ", cut" : "") + (resent.contains(id) ? ", resent by the balancer" : "")
            let outages = done.outages.map { "\(seconds($0.start))…\(seconds($0.end))" }.joined(separator: ", ")
            return "\(id) (tries \(seconds(window.first))…\(seconds(window.last)) s\(cut); outages \(outages) s)"
        }
        let gorushSent = apns.received.filter { $0.status == 200 && $0.token != adamantToken }.map(\.token)
        let gorushDuplicates = gorushSent.count - Set(gorushSent).count
        let chatDuplicates = seen.chats.count - Set(seen.chats).count
        // docs/operations.md, "When a push can arrive twice": the jobs a killed instance's 8 workers
        // held, those of every instance when the database crashed or stopped, and a batch (3 tokens)
        // sent again after an answer the client did not get (a cut connection).
        let outagesCount = done.databaseCrashes + done.databaseFreezes
        let gorushBound = 8 * (done.kills + 3 * outagesCount) + 3 * (done.gorushAnswers[0] ?? 0)
        let table = """

            | fleet chaos test (\(Self.seconds) s of load, 3 instances) | |
            |---|---|
            | Matrix notifies sent / acknowledged / given up | \(done.notifiesSent.count) / \(done.notifiesAcknowledged.count) / \(done.notifiesGivenUp.count) |
            | notify answers (status: count; 0 = broken connection) | \(done.notifyAnswers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")) |
            | acknowledged notifies not delivered | \(done.notifiesAcknowledged.subtracting(seen.notifies).count) |
            | notifies delivered twice: a repeat or a retry / a claim taken over from a SIGKILLed instance / while the record was unreachable (PostgreSQL down or slower than repeat_store_timeout) / a 200 cut by a kill | \(twiceUnexplained) / \(twiceAfterTakeover) (claims taken over: \(takenOver.count)) / \(twiceDuringOutage) / \(twiceAfterACut) (of \(done.notifiesCut.count) cut, \(resent.count) resent by the balancer) |
            | gorush tokens acknowledged / not delivered / sent twice | \(done.gorushAcknowledged.count) / \(Set(done.gorushAcknowledged).subtracting(seen.gorush).count) / \(gorushDuplicates) (bound \(gorushBound)) |
            | gorush answers | \(done.gorushAnswers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")) |
            | Status registrations acknowledged / found afterwards | \(done.registrationsAcknowledged.count) / \(registered) |
            | Status answers | \(done.statusAnswers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")) |
            | ADAMANT chats minted / pushed / pushed twice | \(done.chatsMinted.count) / \(Set(seen.chats).count) / \(chatDuplicates) |
            | instances whose /health named the failing store during the crash / the stop | \(done.healthNamedStore.map { "\($0) of 3" }.joined(separator: " / ")) |
            | seconds until every /health was clear after PostgreSQL's restart / resumption | \(done.recoverySeconds.map { $0.map { "≤ \(Int($0))" } ?? "not within 30" }.joined(separator: " / ")) |
            | SIGKILLs / in-place restarts / PostgreSQL crashes / PostgreSQL stops | \(done.kills) / \(done.restartsInPlace) / \(done.databaseCrashes) / \(done.databaseFreezes) |
            | instances that exited other than 0 on SIGTERM | \(done.sigtermExits.filter { $0 != 0 }.count) of \(done.sigtermExits.count) |
            | services that held a SIGTERM past the grace period | \(done.heldUp.isEmpty ? "none" : done.heldUp.joined(separator: ", ")) |

            """
        print(table)
        try? table.write(toFile: "\(ScratchDirectory.make("chaos"))/table.md", atomically: true, encoding: .utf8)

        #expect(everything, "acknowledged work missing after the load")
        #expect(done.notifiesGivenUp.isEmpty)
        #expect(done.notifiesAcknowledged.subtracting(seen.notifies).isEmpty)
        #expect(Set(done.gorushAcknowledged).isSubset(of: seen.gorush))
        #expect(gorushDuplicates <= gorushBound)
        #expect(done.healthNamedStore == [3, 3])
        #expect(done.recoverySeconds.allSatisfy { ($0 ?? 99) <= 15 }, "docs/scaling.md promises recovery within 15 s")
        #expect(registered == done.registrationsAcknowledged.count)
        #expect(Set(done.chatsMinted).isSubset(of: Set(seen.chats)))
        // Each push is recorded the moment APNs answered it: only one in flight when its poller was
        // SIGKILLed (or lost the lease) is sent again, at most one chat per SIGKILL or crash here.
        #expect(chatDuplicates <= done.kills + outagesCount)
        #expect(done.sigtermExits.allSatisfy { $0 == 0 }, "\(done.sigtermExits): \(done.badExits)")
        #expect(done.notifyAnswers[500] == nil && done.gorushAnswers[500] == nil && done.statusAnswers[500] == nil)
        // docs/operations.md, "Once": the delivery record in PostgreSQL answers every retried or
        // repeated notify from its record or from the call under way: none is delivered twice. What
        // is left is a call under way when its instance was SIGKILLed, whose claim another instance
        // takes over after repeat_takeover (nothing can tell whether the upstream got it): each such
        // duplicate is one the fleet's logs name as taken over, at most the calls in flight at a kill.
        // While PostgreSQL is down, or slower than repeat_store_timeout, an instance's memory stands
        // in (and it logs so), and a retry that reaches another instance then is sent again
        // (documented, and counted apart).
        #expect(
            twiceUnexplained == 0,
            "notifies delivered twice by a repeat or a retry: \(twiceUnexplained); all: \(twiceTimes); their lines in the instances' logs:\n\(Self.logLines(directory: dir, mentioning: twice.map { [$0, Self.deliveryKey($0, subscription: subscription)] }.flatMap { $0 }))"
        )
        #expect(twiceAfterTakeover <= done.kills, "notifies delivered twice after a takeover: \(twiceAfterTakeover)")
        #expect(twiceAfterACut <= done.kills + done.restartsInPlace, "notifies delivered twice after a cut 200: \(twiceAfterACut)")
        #expect(
            done.kills >= 3 && done.restartsInPlace == 3 && done.databaseCrashes == 1 && done.databaseFreezes == 1,
            "\(done.kills) \(done.restartsInPlace) \(done.databaseFreezes)")
    }

    /// An instance's `GET /health`: its status and its body as JSON (`.null` when empty).
    static func health(port: Int) async throws -> (status: Int, body: JSONValue) {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)/health"), timeout: .seconds(5))
        let bytes = Array(try await response.body.collect(upTo: 1 << 16).readableBytesView)
        return (Int(response.status.code), bytes.isEmpty ? .null : (try JSONParser.parse(bytes)))
    }

    /// A distinct APNs pushkey (base64 of 32 bytes) for an event id.
    static func apnsPushkey(_ id: String) -> String { Data(SHA256.hash(data: Data(id.utf8))).base64EncodedString() }
}
