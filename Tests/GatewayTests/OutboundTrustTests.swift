import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import Gateway
@testable import HeraldCore
@testable import HeraldHTTPServer
@testable import HeraldUpstream
@testable import Pushkins

/// Attacker-chosen Web Push and UnifiedPush endpoints whose *names* lead to internal addresses
/// (docs/compatibility/webpush.md, "Which endpoints Herald reaches"). A canary listener on
/// loopback must see no connection at all for any of them, and the homeserver's answer must not
/// depend on whether anything listens behind the refused address.
@Suite struct OutboundTrustTests {
    /// Hosts-file style answers, and a count of lookups; names it does not know go to the system
    /// resolver (numeric forms such as `2130706433`, and `localhost`, never leave the machine).
    final class StagedResolver: Sendable {
        let answers: [String: [String]]
        let lookups = Mutex<[String]>([])
        init(_ answers: [String: [String]]) { self.answers = answers }
        var resolver: HostResolver {
            HostResolver { host, port in
                self.lookups.withLock { $0.append(host) }
                if let answer = self.answers[host.lowercased()] { return .success(answer) }
                return await HostResolver.system.resolve(host, port)
            }
        }
    }

    /// A port on 127.0.0.1 with nothing listening.
    static func closedPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(channel.localAddress?.port)
        try await channel.close()
        return port
    }

    static func webPushApps(_ dir: String) -> String {
        """
          com.example.webpush:
            type: webpush
            vapid_private_key: \(dir)/vapid.pem
            create_vapid_key_if_missing: true
            vapid_contact_email: ops@example.org
            allow_insecure_endpoints: true
            max_attempts: 3
            retry_initial_backoff: 0.01
          com.example.up:
            type: unifiedpush
            allow_insecure_endpoints: true
            max_attempts: 3
            retry_initial_backoff: 0.01

        """
    }

    static func device(_ app: String, _ s: FakeWebPushService.Subscription, endpoint: String) -> JSONValue {
        if app == "com.example.up" { return ["app_id": "com.example.up", "pushkey": .string(endpoint)] }
        return ["app_id": .string(app), "pushkey": .string(s.p256dh), "data": ["endpoint": .string(endpoint), "auth": .string(s.auth)]]
    }

    @Test func noRefusedEndpointReachesAListenerAndTheAnswerDoesNotDependOnThePort() async throws {
        let canary = try await EchoHTTP1Server.start()
        let closed = try await Self.closedPort()
        let staged = StagedResolver([
            "internal.example": ["127.0.0.1"],
            "loopback-two.example": ["127.0.0.2"],
            "mapped.example": ["::ffff:127.0.0.1"],
            "mixed.example": ["127.0.0.1", "93.184.216.34"],
            "mixed-late.example": ["93.184.216.34", "127.0.0.1"],
            "nat64.example": ["64:ff9b::7f00:1"],
        ])
        var registry = PushkinRegistry.standard
        registry.hostResolver = staged.resolver
        let dir = temporaryDirectory()
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: Self.webPushApps(dir)), registry: registry)
        let service = try await FakeWebPushService.start()
        let s = service.subscribe()

        let hosts = [
            "localhost", "LocalHost", "user:pass@localhost", "0", "127.1", "2130706433", "0x7f000001", "0x7f.0.0.1",
            "0177.0.0.1", "017700000001", "127.000.000.001", "internal.example", "loopback-two.example", "mapped.example",
            "mixed.example", "mixed-late.example", "nat64.example",
        ]
        var answers: [String: String] = [:]
        for app in ["com.example.webpush", "com.example.up"] {
            for host in hosts {
                for (label, port) in [("open", canary.port), ("closed", closed)] {
                    for scheme in ["http", "https"] {
                        let endpoint = "\(scheme)://\(host):\(port)/push/\(label)"
                        let response = try await herald.notify(
                            notifyBody(["event_id": "$e"], devices: [Self.device(app, s, endpoint: endpoint)]))
                        answers[endpoint + " " + app] = "\(response.status) \(response.text)"
                    }
                }
            }
        }
        let metrics = try await herald.metricsText()
        await herald.stop()
        await service.stop()
        let connections = canary.connections
        await canary.stop()

        #expect(connections == 0)  // not one connection to the canary, whatever the vector
        #expect(service.received.isEmpty)
        // Every refused endpoint is skipped the same way, open port or closed: nothing to map.
        for (endpoint, answer) in answers.sorted(by: { $0.key < $1.key }) {
            #expect(answer == #"200 {"rejected":[]}"#, "\(endpoint)")
        }
        let refused = hosts.count * 2 * 2
        #expect(metrics.contains(#"herald_endpoint_refusals_total{pushkin="com.example.webpush"} \#(refused)"#))
        #expect(metrics.contains(#"herald_endpoint_refusals_total{pushkin="com.example.up"} \#(refused)"#))
        // The staged names were looked up before any connection: each push its own lookup (no
        // connection was made, so none was kept to reuse).
        let lookups = staged.lookups.withLock { $0 }
        #expect(lookups.filter { $0 == "internal.example" }.count == 2 * 2 * 2)
    }

    @Test func aNameThatResolvesToAPublicAddressIsConnectedToByAddressWithTheNameKept() async throws {
        // The connection goes to the checked address, not to a second lookup of the name: the
        // resolver answers a "public" address, and the classification of that exact address is
        // what the connector used (checked directly below, without a connection to it).
        let origin = try UpstreamOrigin("https://push.example.net:8443")
        let resolver = HostResolver { _, _ in .success(["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]) }
        let addresses = try await UpstreamConnector.checkedAddresses(of: origin, resolver: resolver)
        #expect(addresses.map(\.ipAddress) == ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
        #expect(addresses.map(\.port) == [8443, 8443])
        #expect(origin.authority == "push.example.net:8443")  // SNI and Host keep the name
    }

    @Test(arguments: [
        (["127.0.0.1"], "loopback"), (["::1"], "loopback"), (["169.254.169.254"], "link-local"), (["10.0.0.1"], "private"),
        (["93.184.216.34", "127.0.0.1"], "loopback"), (["93.184.216.34", "fd00::1"], "unique local"),
        (["::ffff:192.168.1.1"], "private"), (["0.0.0.0"], "this-network"), (["not-an-address"], "unparsable"),
    ])
    func everyAddressOfTheAnswerIsClassifiedBeforeConnecting(_ answer: [String], _ kind: String) async throws {
        let origin = try UpstreamOrigin("https://push.example.net")
        let resolver = HostResolver { _, _ in .success(answer) }
        await #expect(throws: PeerAddressRefused.self) { try await UpstreamConnector.checkedAddresses(of: origin, resolver: resolver) }
        do {
            _ = try await UpstreamConnector.checkedAddresses(of: origin, resolver: resolver)
        } catch let refused as PeerAddressRefused {
            #expect(refused.reason == "endpoint resolves to a \(kind) address")
        }
    }

    @Test func aNameThatDoesNotResolveFailsForNowAndOpensNothing() async throws {
        let origin = try UpstreamOrigin("https://push.example.net")
        let failing = HostResolver { host, _ in .failure(NetworkAddress.ResolutionError(host: host, reason: "cannot resolve")) }
        let empty = HostResolver { _, _ in .success([]) }
        await #expect(throws: NetworkAddress.ResolutionError.self) {
            try await UpstreamConnector.checkedAddresses(of: origin, resolver: failing)
        }
        await #expect(throws: NetworkAddress.ResolutionError.self) {
            try await UpstreamConnector.checkedAddresses(of: origin, resolver: empty)
        }
    }
}
