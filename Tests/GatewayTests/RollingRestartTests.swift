import AsyncHTTPClient
import Foundation
import HeraldTestSupport
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
        let yaml = OperatorBinaryTests.webpushConfig(dir, port: port, extra: "  reuse_port: true\nlog:\n  access:\n    enabled: true")
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let old = try AdamantDurabilityTests.Herald.launch(binary, config: path, log: "\(dir)/old.log")
        try await StatusDurabilityTests().waitForHealth(port: port)

        let stream = Stream()
        let url = "http://127.0.0.1:\(port)/_matrix/push/v1/notify"
        let device: JSONValue = [
            "app_id": "com.example.webpush", "pushkey": .string(sub.p256dh),
            "data": ["endpoint": .string(sub.endpoint), "auth": .string(sub.auth)],
        ]
        let newHerald = try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 { group.addTask { await stream.run(url: url, device: device, worker: worker) } }
            try await Task.sleep(for: .milliseconds(300))
            let new = try AdamantDurabilityTests.Herald.launch(binary, config: path, log: "\(dir)/new.log")
            // The new Herald is up once it has served a request of the stream.
            for _ in 0..<200 where !new.output.contains("POST /_matrix/push/v1/notify 200") {
                try await Task.sleep(for: .milliseconds(25))
            }
            await old.kill(SIGTERM)
            try await Task.sleep(for: .milliseconds(300))
            stream.streaming.withLock { $0 = false }
            try await group.waitForAll()
            return new
        }
        try await Task.sleep(for: .milliseconds(200))
        await newHerald.kill(SIGTERM)
        await service.stop()

        let result = stream.outcome.withLock { $0 }
        #expect(result.failures.isEmpty, "\(result.failures.prefix(5))")
        #expect(old.process.terminationStatus == 0)
        let delivered = service.received.compactMap { $0.payload?["event_id"]?.stringValue }
        #expect(delivered.sorted() == result.sent.sorted())  // every push once: none lost, none repeated
        // Both Heralds served part of the stream, and the old one stopped while it was flowing.
        let servedByOld = old.output.components(separatedBy: "POST /_matrix/push/v1/notify 200").count - 1
        let servedByNew = newHerald.output.components(separatedBy: "POST /_matrix/push/v1/notify 200").count - 1
        #expect(servedByOld > 0 && servedByNew > 0 && servedByOld + servedByNew == result.sent.count)
    }
}
