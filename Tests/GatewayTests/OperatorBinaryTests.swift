import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import NIOCore
import NIOHTTP1
import Pushkins
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `herald` executable as an operator runs it: its version, access log and request ids,
/// SIGHUP reload, `send-test`, and tracing to an OTLP collector.
@Suite struct OperatorBinaryTests {
    static var binary: String? { StatusDurabilityTests.heraldBinary }

    /// Runs `herald` with `arguments` to completion: exit status and standard output.
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let pipe = Pipe()
        let process = try ChildProcess.launch(
            try #require(binary), arguments, outputDescriptor: pipe.fileHandleForWriting.fileDescriptor)
        try pipe.fileHandleForWriting.close()
        // Read and waited for on threads of their own, not the cooperative pool's (ChildProcess.exit).
        let reader = pipe.fileHandleForReading
        let data = await offPool { reader.readDataToEndOfFile() }
        let status = await process.exit()
        return (status, String(decoding: data, as: UTF8.self))
    }

    /// `appExtra`: more keys of each app (`per_device_per_minute: 0` for a test that streams one device).
    static func webpushConfig(
        _ dir: String, port: Int, apps: [String] = ["com.example.webpush"], extra: String = "", appExtra: String = ""
    ) -> String {
        """
        http:
          bind_addresses: ['127.0.0.1']
          port: \(port)
        \(extra)
        apps:
        \(apps.map { webpushApp($0, directory: dir, extra: "max_attempts: 1" + appExtra) }.joined())
        """
    }

    static func post(_ url: String, _ body: JSONValue, headers: [String: String] = [:]) async throws -> TestResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: JSONWriter.serialize(body)))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 1 << 20)
        return TestResponse(status: Int(response.status.code), headers: response.headers, body: Array(collected.readableBytesView))
    }

    func device(_ sub: FakeWebPushService.Subscription, app: String = "com.example.webpush", endpoint: String? = nil) -> JSONValue {
        [
            "app_id": .string(app), "pushkey": .string(sub.p256dh),
            "data": ["endpoint": .string(endpoint ?? sub.endpoint), "auth": .string(sub.auth)],
        ]
    }

    @Test(.enabled(if: binary != nil)) func versionNamesTheReleaseAndTheCommit() async throws {
        let (status, output) = try await Self.run(["--version"])
        #expect(status == 0)
        #expect(output.hasPrefix(HeraldVersion.string + " (commit "))
    }

    @Test(.enabled(if: binary != nil)) func theAccessLogAndEveryLineOfARequestCarryItsId() async throws {
        let dir = temporaryDirectory()
        let service = try await FakeWebPushService.start()
        let port = StatusDurabilityTests.freePort()
        let path = "\(dir)/herald.yaml"
        try Self.webpushConfig(dir, port: port, extra: "log:\n  format: json\n  level: info\n  access:\n    enabled: true")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let herald = try AdamantDurabilityTests.Herald.launch(try #require(Self.binary), config: path, log: "\(dir)/herald.log")
        try await StatusDurabilityTests().waitForHealth(port: port)
        let sub = service.subscribe()
        let response = try await Self.post(
            "http://127.0.0.1:\(port)/_matrix/push/v1/notify",
            notifyBody(["event_id": "$e"], devices: [device(sub, endpoint: "http://127.0.0.1:1/x")]),
            headers: ["X-Request-Id": "req-e2e-42"])
        await eventually { herald.output.contains(#""logger":"herald.access""#) }  // the access line is written
        await herald.kill(SIGTERM)
        await service.stop()
        let lines = herald.output.split(separator: "\n").compactMap { try? JSONParser.parse(Array($0.utf8)) }
        #expect(response.status == 502)
        #expect(response.headers.first(name: "X-Request-Id") == "req-e2e-42")
        let access = lines.first { $0["logger"] == "herald.access" && $0["path"] == "/_matrix/push/v1/notify" }
        #expect(access?["method"] == "POST")
        #expect(access?["status"] == "502")
        #expect(access?["request_id"] == "req-e2e-42")
        #expect(access?["duration_ms"] != nil)
        // A line from inside the pushkin, written with no knowledge of the request, carries its id.
        #expect(lines.contains { $0["msg"] == "Upstream request failed" && $0["request_id"] == "req-e2e-42" })
    }

    @Test(.enabled(if: binary != nil)) func sighupAddsAnAppToARunningServer() async throws {
        let dir = temporaryDirectory()
        let service = try await FakeWebPushService.start()
        let port = StatusDurabilityTests.freePort()
        let path = "\(dir)/herald.yaml"
        try Self.webpushConfig(dir, port: port).write(toFile: path, atomically: true, encoding: .utf8)
        let herald = try AdamantDurabilityTests.Herald.launch(try #require(Self.binary), config: path, log: "\(dir)/herald.log")
        try await StatusDurabilityTests().waitForHealth(port: port)
        let sub = service.subscribe()
        let url = "http://127.0.0.1:\(port)/_matrix/push/v1/notify"
        let body = notifyBody(["event_id": "$e"], devices: [device(sub, app: "com.example.second")])
        let before = try await Self.post(url, body)
        try Self.webpushConfig(dir, port: port, apps: ["com.example.webpush", "com.example.second"]).write(
            toFile: path, atomically: true, encoding: .utf8)
        kill(herald.process.processIdentifier, SIGHUP)
        var after = before
        try await eventually {
            after = try await Self.post(url, body)
            return after.json == ["rejected": []]
        }
        await herald.kill(SIGTERM)
        await service.stop()
        #expect(before.json == ["rejected": [.string(sub.p256dh)]])  // unknown app before the reload
        #expect(after.json == ["rejected": []])
        #expect(service.received(for: sub).count == 1)
        #expect(herald.process.terminationStatus == 0)
        #expect(herald.output.contains("Config reloaded"))
    }

    @Test(.enabled(if: binary != nil)) func sendTestSendsOneRealNotificationAndReportsTheAnswer() async throws {
        let dir = temporaryDirectory()
        let service = try await FakeWebPushService.start()
        let path = "\(dir)/herald.yaml"
        try Self.webpushConfig(dir, port: 0).write(toFile: path, atomically: true, encoding: .utf8)
        _ = try await Self.run(["vapid-key", "--config", path])  // creates the key, as `serve` would
        let good = service.subscribe()
        let gone = service.subscribe(behavior: .respond(status: 410))
        func subscription(_ s: FakeWebPushService.Subscription) -> String {
            #"{"endpoint":"\#(s.endpoint)","keys":{"p256dh":"\#(s.p256dh)","auth":"\#(s.auth)"}}"#
        }
        let delivered = try await Self.run([
            "send-test", "--config", path, "--app-id", "com.example.webpush", "--subscription", subscription(good),
        ])
        let rejected = try await Self.run([
            "send-test", "--config", path, "--app-id", "com.example.webpush", "--subscription", subscription(gone),
        ])
        let unknown = try await Self.run(["send-test", "--config", path, "--app-id", "com.example.nope", "--pushkey", "x"])
        await service.stop()
        #expect(delivered.status == 0)
        #expect(delivered.output.contains("outcome: delivered"))
        #expect(service.received(for: good).first?.problems == [])
        #expect(rejected.status == 1)
        #expect(rejected.output.contains("reason: http_410"))
        #expect(rejected.output.contains("the homeserver would delete the pusher): yes"))
        #expect(unknown.status == 1)
        #expect(unknown.output.contains("reason: unknown_app_id"))
    }

    @Test(.enabled(if: binary != nil)) func spansReachAnOTLPCollector() async throws {
        let dir = temporaryDirectory()
        let service = try await FakeWebPushService.start()
        let collector = try await FakeUnifiedPushDistributor.start()
        let endpoint = collector.endpoint("v1-traces", statuses: [200])
        let port = StatusDurabilityTests.freePort()
        let path = "\(dir)/herald.yaml"
        try Self.webpushConfig(dir, port: port, extra: "tracing:\n  enabled: true\n  endpoint: '\(endpoint)'\n  export_interval: 0.1")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let herald = try AdamantDurabilityTests.Herald.launch(try #require(Self.binary), config: path, log: "\(dir)/herald.log")
        try await StatusDurabilityTests().waitForHealth(port: port)
        let sub = service.subscribe()
        let response = try await Self.post(
            "http://127.0.0.1:\(port)/_matrix/push/v1/notify", notifyBody(["event_id": "$e"], devices: [device(sub)]))
        var exported = ""
        // Up to 20 s: alone this takes a few hundred milliseconds, but once in about a dozen runs of
        // the whole suite on two busy cores nothing had arrived after 5 s. The loop ends as soon as
        // the spans are in.
        await eventually {
            exported = collector.received(at: endpoint).map { String(decoding: $0.body, as: UTF8.self) }.joined()
            // The request's own span ends after its answer is written: it may come in a later batch.
            return exported.contains("webpush upstream") && exported.contains("POST /_matrix/push/v1/notify")
        }
        await herald.kill(SIGTERM)
        await service.stop()
        await collector.stop()
        #expect(response.status == 200)
        // Herald's own log, to tell a failed export from a late one if this fails again.
        let log = (try? String(contentsOfFile: "\(dir)/herald.log", encoding: .utf8)) ?? ""
        #expect(
            collector.received(at: endpoint).first?.headers.first(name: "Content-Type") == "application/x-protobuf",
            "\(log.suffix(4000))")
        #expect(exported.contains("POST /_matrix/push/v1/notify"))  // the request
        #expect(exported.contains("dispatch com.example.webpush"))  // the device
        #expect(exported.contains("webpush upstream"))  // the upstream call
        // Recording spans carry their attributes (no-op spans are spared them).
        for attribute in ["http.route", "http.response.status_code", "herald.outcome", "herald.pushkin", "herald.attempt"] {
            #expect(exported.contains(attribute), "\(attribute)")
        }
    }

    @Test(.enabled(if: binary != nil)) func sigtermExitsPromptlyWhenIdleThroughTheSameLoggedPath() async throws {
        let dir = temporaryDirectory()
        let port = StatusDurabilityTests.freePort()
        let path = "\(dir)/herald.yaml"
        try Self.webpushConfig(dir, port: port).write(toFile: path, atomically: true, encoding: .utf8)
        for _ in 0..<2 {
            let herald = try AdamantDurabilityTests.Herald.launch(try #require(Self.binary), config: path, log: "\(dir)/herald.log")
            try await StatusDurabilityTests().waitForHealth(port: port)
            await herald.kill(SIGTERM)
            // Idle, nothing holds the shutdown up: no service waits out the grace period.
            #expect(!herald.output.contains("Did not stop within the shutdown grace period"))
            #expect(herald.process.terminationStatus == 0)
            #expect(herald.output.contains("Shut down"))  // every stop ends the same awaited way
        }
    }

    /// At the descriptor limit the listener neither spins nor stays stuck: connections beyond it are
    /// closed, and once descriptors are free the server answers again.
    @Test(.enabled(if: binary != nil)) func atTheDescriptorLimitTheListenerBacksOffAndRecovers() async throws {
        let dir = temporaryDirectory()
        let port = StatusDurabilityTests.freePort()
        let path = "\(dir)/herald.yaml"
        try Self.webpushConfig(dir, port: port).write(toFile: path, atomically: true, encoding: .utf8)
        let log = "\(dir)/herald.log"
        let process = try ChildProcess.launch(
            "/bin/sh", ["-c", "ulimit -n 64 && exec \"$0\" serve --config \"$1\"", try #require(Self.binary), path], error: log)
        defer { process.stopInBackground(SIGKILL) }
        try await StatusDurabilityTests().waitForHealth(port: port)
        // More connections than descriptors: the rest wait in the listen backlog.
        let sockets = (0..<120).map { _ in RawHTTP.openIdle(port: port) }
        try await letRealTimePass(.milliseconds(500))
        let before = Self.cpuSeconds(of: process.processIdentifier)
        try await letRealTimePass(.seconds(2))
        let spent = Self.cpuSeconds(of: process.processIdentifier) - before
        for fd in sockets where fd >= 0 { close(fd) }
        try await StatusDurabilityTests().waitForHealth(port: port)
        #expect(spent < 0.5, "CPU seconds over 2 s at the descriptor limit: \(spent)")  // a spinning loop spends ~2
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(output.contains("Out of file descriptors"))
    }

    /// User and system CPU time a process has used (`/proc/<pid>/stat`).
    static func cpuSeconds(of pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
