import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import NIOCore
import Pushkins
import Testing

@testable import DeliveryRecord

#if canImport(Glibc)
    import Glibc
#endif

/// "Once" whatever stands in front of Herald (docs/operations.md, "Once"): two `herald` processes
/// on the shared PostgreSQL record behind HAProxy, as an operator's existing balancer is set up
/// (its defaults: no `option abortonclose`, so a client that gives up leaves the connection to
/// Herald open and Herald's late 200 is written into it) and as the fleet recipe sets it up (with
/// it). APNs answers in 8 s; the client gives up after 6 s and retries once APNs has answered (the
/// scenario's times are at least 5 s, so that a loaded machine's delays cannot change its course).
/// Every event reaches the phone once; a test push sent three times reaches it three times.
@Suite(.serialized) struct LoadBalancerRepeatsTests {
    static var enabled: Bool {
        StatusDurabilityTests.heraldBinary != nil && TestPostgres.url != nil && FleetChaosTests.haproxy != nil
    }

    static func haproxyConfig(port: Int, instances: [Int], abortOnClose: Bool) -> String {
        """
        global
          maxconn 1024
        defaults
          mode http
          timeout connect 5s
          timeout client 30s
          timeout server 30s
        \(abortOnClose ? "  option abortonclose\n" : "")frontend herald
          bind 127.0.0.1:\(port)
          default_backend heralds
        backend heralds
          balance roundrobin
        \(instances.enumerated().map { "  server herald\($0.offset) 127.0.0.1:\($0.element)" }.joined(separator: "\n"))

        """
    }

    /// The record's timeout is patient: a record that does not answer in time is stood in for by
    /// each instance's memory (docs/operations.md, "Once"), which a loaded CI machine must not
    /// turn into a second push here; this test is about what the balancer does. So is APNs'
    /// request timeout (30 s, 10 s by default): the fake takes 8 s, past the client's 6 s
    /// patience, and an attempt timed out on a loaded machine would be sent again.
    static func instanceConfig(port: Int, directory dir: String, apns: FakeAPNs, pki: TestPKI, postgres: String) -> String {
        """
        http:
          bind_addresses: ['127.0.0.1']
          port: \(port)
        log:
          level: warning

        """
            + """
            notify:
              repeat_store: \(postgres)
              repeat_store_timeout: 20
              heard_within: 5  # below the client's 6 s patience, as docs/deployment.md asks
            apps:
              com.example.apns:
                type: apns
                keyfile: \(dir)/AuthKey.p8
                key_id: ABC123DEFG
                team_id: TEAM123456
                topic: \(APNsEndToEndTests.topic)
                base_url: \(apns.baseURL)
                tls_ca_file: \(pki.caFile)
                request_timeout: 30

            """
    }

    /// What the instances logged, for a failure's message.
    static func logs(_ dir: String) -> String {
        (0..<2).map { (try? String(contentsOfFile: "\(dir)/herald-\($0).log", encoding: .utf8)) ?? "" }.joined(separator: "\n")
            .suffix(4000).description
    }

    /// One try: the status, or nil when the client gave up (its patience) or the connection broke.
    static func post(_ url: String, _ body: [UInt8], patience: Duration) async -> Int? {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(Int64(patience.nanoseconds)))
            _ = try await response.body.collect(upTo: 1 << 20)
            return Int(response.status.code)
        } catch {
            return nil
        }
    }

    /// Synapse's pusher, impatient: a try that is not answered within 6 s, or is answered 5xx,
    /// is tried again once the upstream has answered the device's first push (`answered`), the
    /// case this test is about: a retry after the first call ended with a 200 nobody read. The
    /// tries' statuses.
    static func notifyAsSynapse(_ url: String, _ body: [UInt8], answered: @escaping @Sendable () -> Bool) async -> [Int?] {
        var statuses: [Int?] = []
        for _ in 0..<8 {
            let status = await post(url, body, patience: .seconds(6))
            statuses.append(status)
            if let status, status < 500 { break }
            _ = await eventually(within: .seconds(60)) { answered() }
        }
        return statuses
    }

    @Test(
        .enabled(if: enabled, "needs the herald executable, HERALD_TEST_POSTGRES_URL and haproxy"), .timeLimit(.minutes(5)),
        arguments: [false, true])
    func anImpatientClientsRetriesThroughHAProxyReachThePhoneOnce(abortOnClose: Bool) async throws {
        let binary = try #require(StatusDurabilityTests.heraldBinary)
        let haproxy = try #require(FleetChaosTests.haproxy)
        let postgres = try #require(TestPostgres.url)
        let dir = temporaryDirectory()
        let pki = try TestPKI(directory: dir)
        let apns = try await FakeAPNs.start(pki: pki, topic: APNsEndToEndTests.topic, auth: try APNsTestKey(directory: dir).auth)
        apns.scriptDefault(.delay(.seconds(8), then: .accept))

        var heralds: [AdamantDurabilityTests.Herald] = []
        var ports: [Int] = []
        for index in 0..<2 {
            let port = StatusDurabilityTests.freePort()
            let config = "\(dir)/herald-\(index).yaml"
            try Self.instanceConfig(port: port, directory: dir, apns: apns, pki: pki, postgres: postgres)
                .write(toFile: config, atomically: true, encoding: .utf8)
            heralds.append(try AdamantDurabilityTests.Herald.launch(binary, config: config, log: "\(dir)/herald-\(index).log"))
            ports.append(port)
        }
        for port in ports { try await StatusDurabilityTests().waitForHealth(port: port) }
        let lbPort = StatusDurabilityTests.freePort()
        try Self.haproxyConfig(port: lbPort, instances: ports, abortOnClose: abortOnClose)
            .write(toFile: "\(dir)/haproxy.cfg", atomically: true, encoding: .utf8)
        let balancer = try ChildProcess.launch(haproxy, ["-db", "-f", "\(dir)/haproxy.cfg"], error: "\(dir)/haproxy.log")
        try await StatusDurabilityTests().waitForHealth(port: lbPort)
        let url = "http://127.0.0.1:\(lbPort)/_matrix/push/v1/notify"

        // Eight events, each to a device of its own, all at once.
        let events = (0..<8).map { n in (event: "$lb-\(UUID().uuidString)-\(n)", pushkey: APNsEndToEndTests.pushkey()) }
        let tries = await withTaskGroup(of: (String, [Int?]).self) { group in
            for (event, pushkey) in events {
                var message = APNsEndToEndTests.message
                message["event_id"] = .string(event)
                let body = JSONWriter.serialize(notifyBody(message, devices: [APNsEndToEndTests().device(pushkey)]))
                let token = APNsEndToEndTests.hex(pushkey)
                group.addTask { (event, await Self.notifyAsSynapse(url, body) { !apns.received(token: token).isEmpty }) }
            }
            var all: [String: [Int?]] = [:]
            for await (event, statuses) in group { all[event] = statuses }
            return all
        }

        // The troubleshooter: three runs, each answered at once, each a push.
        let testKey = APNsEndToEndTests.pushkey()
        apns.script(APNsEndToEndTests.hex(testKey), .accept)
        var testPush = APNsEndToEndTests.message
        testPush["event_id"] = .string(Once.testPushEventId)
        let testBody = JSONWriter.serialize(notifyBody(testPush, devices: [APNsEndToEndTests().device(testKey)]))
        var testAnswers: [Int?] = []
        for _ in 0..<3 { testAnswers.append(await Self.post(url, testBody, patience: .seconds(30))) }

        balancer.stopInBackground(SIGTERM)
        for herald in heralds { await herald.kill(SIGTERM) }
        await apns.stop()

        for (event, pushkey) in events {
            let statuses = tries[event] ?? []
            #expect(statuses.last == 200, "\(event): \(statuses)")
            // At least one try gave up: the case this test is about.
            #expect(statuses.count > 1 && statuses[0] == nil, "\(event): \(statuses)")
            let pushes = apns.received(token: APNsEndToEndTests.hex(pushkey)).count
            #expect(pushes == 1, "\(event) (abortonclose: \(abortOnClose)): \(statuses); \(Self.logs(dir))")
        }
        #expect(testAnswers == [200, 200, 200])
        #expect(apns.received(token: APNsEndToEndTests.hex(testKey)).count == 3)
    }
}
