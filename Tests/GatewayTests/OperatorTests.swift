import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Logging
import NIOHTTP1
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// What operators reach for, in process: request ids, reload, the outbound proxy.
// Serialized: a reload sets the process's log level, which another test's reload would race.
@Suite(.serialized) struct OperatorTests {
    static let probeApp = "  com.example.probe:\n    type: probe\n"

    @Test func everyResponseCarriesARequestIdEchoedWhenAcceptable() async throws {
        let herald = try await RunningGateway.start(gatewayYAML(apps: Self.probeApp), registry: .withProbe(Probe()))
        let base = herald.base
        func requestId(_ sent: String?) async throws -> String? {
            var request = HTTPClientRequest(url: base + "/health")
            if let sent { request.headers.add(name: "X-Request-Id", value: sent) }
            return try await HTTPClient.shared.execute(request, timeout: .seconds(60)).headers.first(name: "X-Request-Id")
        }
        let echoed = try await requestId("trace-42.a:b_c")
        let generated = try await requestId(nil)
        let replaced = try await requestId("has space")
        await herald.stop()
        #expect(echoed == "trace-42.a:b_c")
        #expect(generated?.count == 36)
        #expect(replaced != nil && replaced != "has space")
    }

    @Test func reloadSwapsAppsWithoutDroppingARequestInFlightAndRefusesABadFile() async throws {
        let probe = Probe()
        let dir = temporaryDirectory()
        let path = "\(dir)/herald.yaml"
        let initial = gatewayYAML(apps: Self.probeApp)
        try initial.write(toFile: path, atomically: true, encoding: .utf8)
        let herald = try await RunningGateway.start(initial, registry: .withProbe(probe))
        @Sendable func device(_ app: String, _ key: String) -> JSONValue { ["app_id": .string(app), "pushkey": .string(key)] }

        async let held = herald.notify(notifyBody(devices: [device("com.example.probe", "hold-1")]))
        await probe.waitForActive(1)
        let before = try await herald.notify(notifyBody(devices: [device("com.example.other", "accept")]))
        try (gatewayYAML(apps: Self.probeApp + "  com.example.other:\n    type: probe\n") + "\nlog:\n  level: debug\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        async let reloaded = herald.gateway.reload(configPath: path)
        // The new routes serve while the request held under the old ones is still in progress.
        var after = before
        try await eventually {
            after = try await herald.notify(notifyBody(devices: [device("com.example.other", "accept")]))
            return after.json == ["rejected": []]
        }
        probe.release()
        let heldResponse = try await held
        let errors = await reloaded

        try "apps:\n  broken:\n    type: nosuchtype\n".write(toFile: path, atomically: true, encoding: .utf8)
        let refused = await herald.gateway.reload(configPath: path)
        let stillServed = try await herald.notify(notifyBody(devices: [device("com.example.other", "accept")]))
        await herald.stop()

        #expect(before.json == ["rejected": ["accept"]])  // unknown app before the reload
        #expect(errors == [])
        #expect(after.json == ["rejected": []])
        #expect(heldResponse.status == 200)  // the request in flight finished on the old pushkins
        #expect(LogLevelControl.current == .debug)
        #expect(refused.first?.contains("unknown pushkin type 'nosuchtype'") == true)
        #expect(stillServed.json == ["rejected": []])  // the running config stayed
    }

    /// A request held past the grace period does not hold the reload: it returns once the period
    /// has passed (here 0 s), the held request still finishes, and nothing waits for it any more.
    @Test(.timeLimit(.minutes(1))) func aReloadDoesNotWaitForARequestHeldPastTheGracePeriod() async throws {
        let probe = Probe()
        let dir = temporaryDirectory()
        let path = "\(dir)/herald.yaml"
        let yaml = gatewayYAML(apps: Self.probeApp).replacingOccurrences(
            of: "shutdown_grace_period: 10", with: "shutdown_grace_period: 0")
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let herald = try await RunningGateway.start(yaml, registry: .withProbe(probe))
        async let held = herald.notify(notifyBody(devices: [["app_id": "com.example.probe", "pushkey": "hold-1"]]))
        await probe.waitForActive(1)
        let errors = await herald.gateway.reload(configPath: path)
        probe.release()
        let heldResponse = try await held
        await herald.stop()
        #expect(errors == [])
        #expect(heldResponse.status == 200)
    }

    @Test func upstreamTrafficGoesThroughTheConnectProxyWithItsCredentialsUnlessNoProxySaysOtherwise() async throws {
        let dir = temporaryDirectory()
        let pki = try TestPKI(directory: dir)
        let apns = try await FakeAPNs.start(
            pki: pki, topic: "com.example.app", auth: try APNsTestKey(directory: dir).auth)
        let proxy = try await FakeConnectProxy.start(username: "user", password: "s3cret")
        let app = """
              com.example.apns:
                type: apns
                keyfile: \(dir)/AuthKey.p8
                key_id: ABC123DEFG
                team_id: TEAM123456
                topic: com.example.app
                base_url: \(apns.baseURL)
                tls_ca_file: \(pki.caFile)
                max_attempts: 3
                retry_initial_backoff: 0.05
                connect_timeout: CONNECT_TIMEOUT
                request_timeout: 120

            """
        let pushkey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let body = notifyBody(
            ["event_id": "$e", "room_id": "!r", "type": "m.room.message", "content": ["body": "hi", "msgtype": "m.text"]],
            devices: [["app_id": "com.example.apns", "pushkey": .string(pushkey)]])
        func run(_ proxyLine: String, connectTimeout: Int = 10) async throws -> Int {
            let yaml = gatewayYAML(apps: app.replacingOccurrences(of: "CONNECT_TIMEOUT", with: String(connectTimeout)), extra: proxyLine)
            let herald = try await RunningGateway.start(yaml)
            let response = try await herald.notify(body)
            await herald.stop()
            return response.status
        }
        let proxied = try await run("proxy: 'http://user:s3cret@127.0.0.1:\(proxy.port)'")
        let afterProxied = (proxy.connects, apns.received.count)
        let wrongPassword = try await run("proxy: 'http://user:wrong@127.0.0.1:\(proxy.port)'", connectTimeout: 1)
        let afterWrong = (Array(proxy.connects.dropFirst(afterProxied.0.count)), apns.received.count)
        let bypassed = try await run("proxy: 'http://user:s3cret@127.0.0.1:\(proxy.port)'\nno_proxy: ['.localhost', 'example.org']")
        await proxy.stop()
        await apns.stop()

        #expect(proxied == 200)
        // One tunnel with the credentials (on a loaded machine the first attempt may time out and
        // be retried through a second one).
        #expect(!afterProxied.0.isEmpty && afterProxied.0.count <= 2, "\(afterProxied.0)")
        #expect(afterProxied.0.allSatisfy { $0 == .init(target: "localhost:\(apns.port)", authorized: true) })
        #expect(afterProxied.1 == 1)
        #expect(wrongPassword == 502)
        #expect(!afterWrong.0.isEmpty && afterWrong.0.allSatisfy { !$0.authorized })  // refused by the proxy
        #expect(afterWrong.1 == 1)  // nothing more reached APNs
        let connectsBeforeBypass = afterWrong.0.count + afterProxied.0.count
        #expect(bypassed == 200)
        #expect(proxy.connects.count == connectsBeforeBypass)  // NO_PROXY: straight to APNs
        #expect(apns.received.count == 2)
    }

    @Test func noProxyMatchesHostsAndTheirSubdomains() {
        let proxy = ProxySettings(host: "p", port: 1, noProxy: ProxySettings.noProxyList(" .example.org, localhost ,"))
        #expect(proxy.bypasses("push.example.org"))
        #expect(proxy.bypasses("example.org"))
        #expect(proxy.bypasses("LOCALHOST"))
        #expect(!proxy.bypasses("example.org.evil.com"))
        #expect(!proxy.bypasses("notexample.org"))
        #expect(ProxySettings(host: "p", port: 1, noProxy: ["*"]).bypasses("anything"))
    }
}
