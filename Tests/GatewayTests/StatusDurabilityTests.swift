import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import NIOCore
import NIOHTTP1
import Pushkins
import StatusAdapter
import SwiftProtobuf
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An acknowledged registration is durable: the `herald` process is killed with SIGKILL right
/// after its acknowledgements, restarted on the same SQLite file, and every registration is there.
@Suite struct StatusDurabilityTests {
    /// The `herald` executable next to the test bundle (`swift build --build-tests` builds it).
    static var heraldBinary: String? {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald").path,
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("herald").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The `http:` and `log:` sections of a Herald started as a process on `port`, quiet but for errors.
    static func listenerYAML(port: Int) -> String {
        """
        http:
          bind_addresses: ['127.0.0.1']
          port: \(port)
        log:
          level: error

        """
    }

    /// A fake APNs for Status's topic, with its CA and the provider key written to `directory`.
    static func fakeAPNs(directory dir: String) async throws -> (TestPKI, FakeAPNs) {
        let pki = try TestPKI(directory: dir)
        let key = try APNsTestKey(directory: dir)
        return (pki, try await FakeAPNs.start(pki: pki, topic: "im.status.ethereum", auth: key.auth))
    }

    /// Writes the config of a Herald on `port` whose Status server (SQLite store in `directory`)
    /// delivers through the fake `apns` (its key written there by `APNsTestKey`); returns its path.
    static func statusWithAPNsConfig(port: Int, directory dir: String, apns: FakeAPNs, pki: TestPKI, statusExtra: String = "") throws
        -> String
    {
        let config = "\(dir)/herald.yaml"
        try
            (listenerYAML(port: port)
                + """
                apps:
                  im.status.ios:
                    type: apns
                    keyfile: \(dir)/AuthKey.p8
                    key_id: ABC123DEFG
                    team_id: TEAM123456
                    topic: im.status.ethereum
                    base_url: \(apns.baseURL)
                    tls_ca_file: \(pki.caFile)
                status:
                  store: \(dir)/status.sqlite
                  apns_app: im.status.ios

                """ + statusExtra).write(toFile: config, atomically: true, encoding: .utf8)
        return config
    }

    /// A port on 127.0.0.1 for a Herald process a test starts: below the kernel's ephemeral range
    /// (32768 and up here), so no port-0 bind and no outgoing connection of the test run can take it
    /// between this check and the child's bind, and never the same one twice in a run. (A port-0
    /// port released and handed to a child was once taken meanwhile by another test's server: the
    /// child could not bind and exited 1.)
    static func freePort() -> Int {
        while true {
            let port = nextPort.withLock { next -> Int in
                defer { next = next >= 32_000 ? 20_000 : next + 1 }
                return next
            }
            if canBind(port) { return port }
        }
    }

    private static let nextPort = Mutex(Int.random(in: 20_000..<31_000))

    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    func launch(_ binary: String, config: String) throws -> ChildProcess {
        let process = try ChildProcess.launch(binary, ["serve", "--config", config])
        return process
    }

    /// Waits up to 60 s (a first start of the debug binary on a loaded machine is slow).
    func waitForHealth(port: Int) async throws {
        let up = await eventually { (try? await RunningGatewayClient.get("http://127.0.0.1:\(port)/health")) == 200 }
        if !up { Issue.record("herald did not come up on port \(port)") }
    }

    @Test(.enabled(if: heraldBinary != nil, "needs the herald executable (swift build --build-tests)"))
    func acknowledgedRegistrationsSurviveSIGKILL() async throws {
        let binary = try #require(Self.heraldBinary)
        let dir = temporaryDirectory()
        let port = Self.freePort()
        let config = "\(dir)/herald.yaml"
        try
            (StatusDurabilityTests.listenerYAML(port: port)
                + """
                apps:
                  com.example.webpush:
                    type: webpush
                    vapid_private_key: \(dir)/vapid.pem
                    create_vapid_key_if_missing: true
                    vapid_contact_email: ops@example.org
                status:
                  store: \(dir)/status.sqlite
                """).write(toFile: config, atomically: true, encoding: .utf8)

        let first = try launch(binary, config: config)
        try await waitForHealth(port: port)
        let base = "http://127.0.0.1:\(port)"
        let identity = try #require(try await RunningGatewayClient.json("\(base)/_status/v1/identity")?["public_key"]?.stringValue)
        let server = try Secp256k1.PublicKey(bytes: try #require([UInt8](hex: identity)))
        let clients = (0..<25).map { _ in StatusTestClient() }
        for client in clients {
            let message = try client.registrationMessage(try client.registration(server: server), server: server)
            let body = try await RunningGatewayClient.post("\(base)/_status/v1/message", body: message)
            let response = try Protobuf_PushNotificationRegistrationResponse(serializedBytes: try StatusTestClient.open(body).payload)
            #expect(response.success)
        }
        await first.stop(SIGKILL)

        let second = try launch(binary, config: config)
        defer { second.stopInBackground(SIGTERM) }
        try await waitForHealth(port: port)
        #expect(try await RunningGatewayClient.json("\(base)/_status/v1/identity")?["public_key"]?.stringValue == identity)
        let query = try StatusTestClient.queryMessage(publicKeys: clients.map(\.hashedKey))
        let answer = try await RunningGatewayClient.post("\(base)/_status/v1/message", body: query)
        let infos = try Protobuf_PushNotificationQueryResponse(serializedBytes: try StatusTestClient.open(answer).payload).info
        #expect(Set(infos.map { [UInt8]($0.publicKey) }) == Set(clients.map(\.hashedKey)))
    }

    /// Push requests' answers are written to the store behind the answer (docs/status-protocol.md):
    /// on SIGTERM, what was answered and not yet written is stored before Herald exits, so after a
    /// restart every duplicate gets its first answer again and nothing is sent twice.
    @Test(.enabled(if: heraldBinary != nil, "needs the herald executable (swift build --build-tests)"))
    func answeredPushRequestsSurviveSIGTERM() async throws {
        let binary = try #require(Self.heraldBinary)
        let dir = temporaryDirectory()
        let (pki, apns) = try await Self.fakeAPNs(directory: dir)
        let port = Self.freePort()
        let config = try Self.statusWithAPNsConfig(port: port, directory: dir, apns: apns, pki: pki)
        let base = "http://127.0.0.1:\(port)"

        let first = try launch(binary, config: config)
        try await waitForHealth(port: port)
        let identity = try #require(try await RunningGatewayClient.json("\(base)/_status/v1/identity")?["public_key"]?.stringValue)
        let server = try Secp256k1.PublicKey(bytes: try #require([UInt8](hex: identity)))
        let recipient = StatusTestClient()
        let accessToken = UUID().uuidString.lowercased()
        let registration = try recipient.registration(server: server, token: "0a0b0c0d", accessToken: accessToken)
        _ = try await RunningGatewayClient.post(
            "\(base)/_status/v1/message", body: try recipient.registrationMessage(registration, server: server))
        let sender = StatusTestClient()
        let requests = try (0..<40).map { n -> [UInt8] in
            var request = Protobuf_PushNotificationRequest()
            request.messageID = Data(Keccak.keccak256(Array("durable-\(n)".utf8)))
            request.requests = [sender.notification(to: recipient, accessToken: accessToken)]
            return try StatusTestClient.pushMessage(request)
        }
        var answers: [[UInt8]] = []
        for request in requests {
            let answer = try await RunningGatewayClient.post("\(base)/_status/v1/message", body: request)
            #expect(try StatusTestClient.open(answer).type == 21)
            answers.append(answer)
        }
        #expect(apns.received.count == requests.count)
        await first.stop(SIGTERM)
        #expect(first.terminationStatus == 0)

        let second = try launch(binary, config: config)
        defer { second.stopInBackground(SIGTERM) }
        try await waitForHealth(port: port)
        for (request, answer) in zip(requests, answers) {
            #expect(try await RunningGatewayClient.post("\(base)/_status/v1/message", body: request) == answer)
        }
        #expect(apns.received.count == requests.count)  // no duplicate was sent again
        await apns.stop()
    }
}

/// The real process and the real signal: SIGTERM lets a request in progress finish, then Herald exits 0.
@Suite struct SignalTests {
    @Test(.enabled(if: StatusDurabilityTests.heraldBinary != nil, "needs the herald executable (swift build --build-tests)"))
    func sigtermDrainsRequestsInProgress() async throws {
        let binary = try #require(StatusDurabilityTests.heraldBinary)
        let service = try await FakeWebPushService.start()
        let subscription = service.subscribe(behavior: .delay(.milliseconds(1500), then: .respond()))
        let dir = temporaryDirectory()
        let port = StatusDurabilityTests.freePort()
        let config = "\(dir)/herald.yaml"
        try gatewayYAML(apps: webpushApp("com.example.webpush", directory: dir))
            .replacingOccurrences(of: "port: 0\n  shutdown_grace_period", with: "port: \(port)\n  shutdown_grace_period")
            .replacingOccurrences(of: "enabled: true", with: "enabled: false")
            .write(toFile: config, atomically: true, encoding: .utf8)
        let process = try ChildProcess.launch(binary, ["serve", "--config", config])
        try await StatusDurabilityTests().waitForHealth(port: port)
        let body = notifyBody(
            ["event_id": "$e"],
            devices: [
                [
                    "app_id": "com.example.webpush", "pushkey": .string(subscription.p256dh),
                    "data": ["endpoint": .string(subscription.endpoint), "auth": .string(subscription.auth)],
                ]
            ])
        async let response = URLRequestLite(
            url: "http://127.0.0.1:\(port)/_matrix/push/v1/notify", method: .POST, body: JSONWriter.serialize(body)
        )
        .send()
        await eventually { !service.received.isEmpty }
        kill(process.processIdentifier, SIGTERM)
        let answered = try await response
        await process.exit()
        await service.stop()
        #expect(answered.status == 200)
        #expect(answered.json == ["rejected": []])
        #expect(process.terminationStatus == 0)
        #expect(service.received.count == 1)
    }
}

/// Plain requests to a gateway started outside the test process.
enum RunningGatewayClient {
    static func get(_ url: String) async throws -> Int {
        var request = URLRequestLite(url: url, method: .GET)
        request.timeout = .seconds(2)
        return try await request.send().status
    }

    static func json(_ url: String) async throws -> JSONValue? {
        try await URLRequestLite(url: url, method: .GET).send().json
    }

    static func post(_ url: String, body: [UInt8]) async throws -> [UInt8] {
        var request = URLRequestLite(url: url, method: .POST)
        request.body = body
        return try await request.send().body
    }
}

struct URLRequestLite {
    var url: String
    var method: HTTPMethod
    var body: [UInt8]?
    var timeout: TimeAmount = .seconds(30)

    func send() async throws -> TestResponse {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let collected = try await response.body.collect(upTo: 1 << 24)
        return TestResponse(status: Int(response.status.code), headers: response.headers, body: Array(collected.readableBytesView))
    }
}

/// gorush's queue is in the Status store: what was answered "ok" is sent even when Herald is killed
/// with work still queued.
@Suite struct GorushQueueDurabilityTests {
    @Test(.enabled(if: StatusDurabilityTests.heraldBinary != nil, "needs the herald executable (swift build --build-tests)"))
    func aQueueAnsweredOkSurvivesSIGKILL() async throws {
        let binary = try #require(StatusDurabilityTests.heraldBinary)
        let dir = temporaryDirectory()
        let (pki, apns) = try await StatusDurabilityTests.fakeAPNs(directory: dir)
        apns.scriptDefault(.delay(.milliseconds(10), then: .accept))  // slow enough for a queue to build up
        let port = StatusDurabilityTests.freePort()
        let config = try StatusDurabilityTests.statusWithAPNsConfig(
            port: port, directory: dir, apns: apns, pki: pki,
            statusExtra: """
                  gorush:
                    workers: 2
                """)

        let first = try AdamantDurabilityTests.Herald.launch(binary, config: config, log: "\(dir)/first.log")
        try await StatusDurabilityTests().waitForHealth(port: port)
        var tokens: [String] = []
        for job in 0..<30 {
            let batch = (0..<10).map { String(format: "%02x%02x", job, $0) }
            tokens += batch
            let body: JSONValue = [
                "notifications": [["tokens": .array(batch.map { .string($0) }), "platform": 1, "message": "hi"]]
            ]
            let response = try await RunningGatewayClient.post(
                "http://127.0.0.1:\(port)/api/push", body: JSONWriter.serialize(body))
            #expect(try JSONParser.parse(response)["success"] == "ok")
        }
        let sentBeforeKill = Set(apns.received.map(\.token))
        await first.kill(SIGKILL)
        #expect(sentBeforeKill.count < tokens.count)  // the kill came with work still queued

        let second = try AdamantDurabilityTests.Herald.launch(binary, config: config, log: "\(dir)/second.log")
        defer { second.process.stopInBackground(SIGTERM) }
        await eventually { Set(apns.received.map(\.token)).count >= tokens.count }
        await apns.stop()
        let received = apns.received.map(\.token)
        #expect(Set(received) == Set(tokens))  // every acknowledged token was sent
        // At least once: only the jobs the killed workers held (2 × 10 tokens) may be sent twice.
        #expect(received.count - Set(received).count <= 20)
    }
}

/// PostgreSQL down under a running Herald (docs/configuration.md, `status.store_timeout`): a
/// request waits at most the store timeout and then fails for now in its dialect (gorush: 503 with
/// `Retry-After`; a Status registration: its in-band `INTERNAL_ERROR`), never a 500 nor a request
/// held open; the Matrix API goes on; and once PostgreSQL is back, requests succeed by themselves.
@Suite(.serialized) struct StatusStoreOutageTests {
    @Test(.enabled(if: ThrowawayPostgres.available && TestPostgres.url != nil, "needs root and PostgreSQL's server"))
    func whilePostgreSQLIsDownRequestsFailForNowAndRecoverByThemselves() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let dir = temporaryDirectory()
        let (pki, apns) = try await StatusDurabilityTests.fakeAPNs(directory: dir)
        let apps = apnsApp("im.status.ios", directory: dir, baseURL: apns.baseURL, caFile: pki.caFile, topic: "im.status.ethereum")
        let status = """
            status:
              store: \(postgres.url)
              apns_app: im.status.ios
              gorush:
                enabled: true
            """
        let herald = try await RunningGateway.start(gatewayYAML(apps: apps, extra: status))
        let batch = Array(#"{"notifications":[{"tokens":["0a0b0c"],"platform":1,"message":"hi"}]}"#.utf8)
        // The store's timeout is the default (5 s), in real time (the database's clock is real):
        // should the pool's first connection take longer on a loaded machine, the store is skipped
        // until its probe is answered, and the request is made again until it is.
        var before = try await herald.request(.POST, "/api/push", body: batch)
        _ = await eventually {
            if before.status == 200 { return true }
            before = (try? await herald.request(.POST, "/api/push", body: batch)) ?? before
            return before.status == 200
        }
        let identity = try #require(try await herald.request(.GET, "/_status/v1/identity").json?["public_key"]?.stringValue)
        let server = try Secp256k1.PublicKey(bytes: try #require([UInt8](hex: identity)))
        func register() async throws -> Protobuf_PushNotificationRegistrationResponse {
            let client = StatusTestClient()
            let message = try client.registrationMessage(try client.registration(server: server), server: server)
            let answer = try await herald.request(.POST, "/_status/v1/message", body: message)
            #expect(answer.status == 200)
            return try Protobuf_PushNotificationRegistrationResponse(serializedBytes: try StatusTestClient.open(answer.body).payload)
        }

        try postgres.crash()
        // Answered at the store timeout (5 s): a request held while the database is down would
        // never be answered before the restart below, and would fail at the client's 60 s.
        let during = try await herald.request(.POST, "/api/push", body: batch)
        let registration = try await register()
        let pushkey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let notify = try await herald.notify(
            notifyBody(["event_id": "$e"], devices: [["app_id": "im.status.ios", "pushkey": .string(pushkey)]]))
        let healthDuring = try await herald.request(.GET, "/health")

        try postgres.restart()
        // A store that stopped answering is skipped until a probe (one a second) finds it back.
        var after = try await herald.request(.POST, "/api/push", body: batch)
        _ = await eventually {
            after = (try? await herald.request(.POST, "/api/push", body: batch)) ?? after
            return after.status == 200
        }
        var registeredAfter = try await register()
        _ = await eventually {
            if let again = try? await register() { registeredAfter = again }
            return registeredAfter.success
        }
        let healthAfter = try await herald.request(.GET, "/health")
        await herald.stop()
        await apns.stop()

        #expect(before.status == 200)
        #expect(during.status == 503)
        #expect(during.headers.first(name: "Retry-After") == "5")
        #expect(during.json == ["code": 503, "message": "Queue is unavailable, try again later."])
        #expect(!registration.success && registration.error == .internalError)
        #expect(notify.status == 200)  // the Matrix API needs no database
        #expect(after.status == 200)
        #expect(registeredAfter.success)
        // /health stays 200 (the instance still serves the Matrix API) and names the broken store.
        #expect(healthDuring.status == 200)
        #expect(healthDuring.json?["failing"]?["status_store"]?["error"]?.stringValue?.isEmpty == false)
        #expect(healthDuring.json?["failing"]?["status_store"]?["since"]?.stringValue?.hasSuffix("Z") == true)
        #expect(healthAfter.status == 200 && healthAfter.body.isEmpty)
    }
}
