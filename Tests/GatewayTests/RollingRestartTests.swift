import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import NIOCore
import NIOHTTP1
import Pushkins
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A rolling restart with `http.reuse_port` (docs/operations.md): a new Herald starts on the same
/// port, the old one is stopped, and a homeserver sending a steady stream of notifies over fresh
/// connections sees no refused or reset connection, no lost push and no push sent twice.
@Suite struct RollingRestartTests {
    struct Outcome: Sendable {
        var sent: [String] = []
        var failures: [String] = []
    }

    /// Notifies one after another (per worker), each on a fresh connection, until told to stop.
    final class Stream: Sendable {
        let outcome = Mutex(Outcome())
        let streaming = Mutex(true)

        func run(url: String, device: JSONValue, worker: Int) async {
            var n = 0
            while streaming.withLock({ $0 }) {
                n += 1
                let id = "$event-\(worker)-\(n)"
                outcome.withLock { $0.sent.append(id) }
                do {
                    let response = try await OperatorBinaryTests.post(
                        url, notifyBody(["event_id": .string(id)], devices: [device]), headers: ["Connection": "close"])
                    if response.status != 200 || response.json != ["rejected": []] {
                        outcome.withLock { $0.failures.append("\(id): \(response.status) \(response.text)") }
                    }
                } catch {
                    outcome.withLock { $0.failures.append("\(id): \(error)") }
                }
            }
        }
    }

    @Test(.enabled(if: StatusDurabilityTests.heraldBinary != nil, "needs the herald executable"))
    func aStreamOfNotifiesCrossesARestartUntouched() async throws {
        let binary = try #require(StatusDurabilityTests.heraldBinary)
        let service = try await FakeWebPushService.start()
        let sub = service.subscribe()
        let dir = temporaryDirectory()
        let port = StatusDurabilityTests.freePort()
        let path = "\(dir)/herald.yaml"
        // The handover's windows are wider than their defaults (0.5 s, 2 s): the test is about the
        // handover, and with the whole suite beside two busy loops an old Herald starved of a core
        // for longer once closed two connections it had accepted before their requests were read.
        let http = "  reuse_port: true\n  reuse_port_handover: 3\n  shutdown_first_request_wait: 15\n"
        // One device gets the whole stream: its budget is off (the test is about the restarts).
        let yaml = OperatorBinaryTests.webpushConfig(
            dir, port: port, extra: http + "log:\n  access:\n    enabled: true", appExtra: "\nper_device_per_minute: 0")
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let first = try AdamantDurabilityTests.Herald.launch(binary, config: path, log: "\(dir)/herald-0.log")
        try await StatusDurabilityTests().waitForHealth(port: port)

        let stream = Stream()
        let url = "http://127.0.0.1:\(port)/_matrix/push/v1/notify"
        let device: JSONValue = [
            "app_id": "com.example.webpush", "pushkey": .string(sub.p256dh),
            "data": ["endpoint": .string(sub.endpoint), "auth": .string(sub.auth)],
        ]
        // Several restarts in a row, as a fleet's rolling restart makes: each one a chance for a
        // connection queued on the stopping listener to be reset, were it not handed over.
        let restarts = 4
        let instances = try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 { group.addTask { await stream.run(url: url, device: device, worker: worker) } }
            #expect(try await Self.until { stream.outcome.withLock { $0.sent.count } >= 8 })  // the stream flows
            var instances = [first]
            for n in 1...restarts {
                let old = instances[n - 1]
                let new = try AdamantDurabilityTests.Herald.launch(binary, config: path, log: "\(dir)/herald-\(n).log")
                instances.append(new)
                // The new Herald is up once it has served a request of the stream.
                #expect(try await Self.until { Self.served(new) > 0 })
                await old.kill(SIGTERM)
                // The stream goes on through the new Herald alone for a while.
                let servedWhenOldStopped = Self.served(new)
                #expect(try await Self.until { Self.served(new) >= servedWhenOldStopped + 8 })
            }
            stream.streaming.withLock { $0 = false }
            try await group.waitForAll()
            return instances
        }
        await instances[restarts].kill(SIGTERM)
        await service.stop()

        let result = stream.outcome.withLock { $0 }
        #expect(result.failures.isEmpty, "\(result.failures.prefix(5))")
        for old in instances.dropLast() { #expect(old.process.terminationStatus == 0, "\(old.output.suffix(2000))") }
        let delivered = service.received.compactMap { $0.payload?["event_id"]?.stringValue }
        #expect(delivered.sorted() == result.sent.sorted())  // every push once: none lost, none repeated
        // Every Herald served part of the stream, and each old one stopped while it was flowing.
        let served = instances.map(Self.served)
        #expect(served.allSatisfy { $0 > 0 } && served.reduce(0, +) == result.sent.count, "\(served)")
    }

    /// Notifies an instance answered 200, from its access log.
    static func served(_ herald: AdamantDurabilityTests.Herald) -> Int {
        herald.output.components(separatedBy: "POST /_matrix/push/v1/notify 200").count - 1
    }

    /// Waits for `condition`, checking every 25 ms, for at most 60 s.
    static func until(_ condition: () -> Bool) async throws -> Bool {
        await eventually { condition() }
    }
}
