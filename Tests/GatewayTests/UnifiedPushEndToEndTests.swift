import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// Matrix → UnifiedPush through real sockets: Herald → a fake distributor that records what its
/// endpoints received (docs/compatibility/unifiedpush.md).
@Suite struct UnifiedPushEndToEndTests {
    struct Setup {
        let herald: RunningGateway
        let distributor: FakeUnifiedPushDistributor

        func stop() async {
            await herald.stop()
            await distributor.stop()
        }
    }

    func start(extra: String = "allow_insecure_endpoints: true\nallow_private_endpoints: true") async throws -> Setup {
        let distributor = try await FakeUnifiedPushDistributor.start()
        let apps = """
              "im.fluffychat.*":
                type: unifiedpush
                max_attempts: 2
                retry_initial_backoff: 0.01
                retry_max_backoff: 0.02
            \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

            """
        let herald = try await RunningGateway.start(gatewayYAML(apps: apps))
        return Setup(herald: herald, distributor: distributor)
    }

    /// A Synapse request with its one device pointed at `endpoint`.
    func synapseRequest(_ endpoint: String, extraDevice: String? = nil) throws -> JSONValue {
        guard case .object(var root) = try #require(try fixture("synapse/message_full")["request_body"]),
            case .object(var notification)? = root["notification"], case .object(var device)? = notification["devices"]?.arrayValue?.first
        else { throw FixtureMissing(name: "synapse/message_full") }
        device["app_id"] = "im.fluffychat.app"
        device["pushkey"] = .string(endpoint)
        var devices: [JSONValue] = [.object(device)]
        if let extraDevice {
            device["pushkey"] = .string(extraDevice)
            devices.append(.object(device))
        }
        notification["devices"] = .array(devices)
        root["notification"] = .object(notification)
        return .object(root)
    }

    @Test func aSynapseNotificationReachesTheEndpointWithoutTheDevicesList() async throws {
        let setup = try await start()
        let endpoint = setup.distributor.endpoint()
        let other = setup.distributor.endpoint()
        let request = try synapseRequest(endpoint, extraDevice: other)
        let response = try await setup.herald.notify(request)
        await setup.stop()

        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        let received = try #require(setup.distributor.received(at: endpoint).first)
        #expect(setup.distributor.received(at: endpoint).count == 1)
        #expect(received.headers.first(name: "Content-Type") == "application/json")
        var expected = try #require(request["notification"]?.objectValue)
        expected.removeValue(forKey: "devices")
        #expect(received.json == ["notification": .object(expected)])  // the homeserver's fields, in its order
        #expect(received.json?["notification"]?["devices"] == nil)  // no other device's pushkey leaves Herald
        #expect(setup.distributor.received(at: other).count == 1)
    }

    @Test(arguments: [404, 410])
    func aGoneEndpointRejectsThePushkey(_ status: Int) async throws {
        let setup = try await start()
        let endpoint = setup.distributor.endpoint(statuses: [status])
        let response = try await setup.herald.notify(try synapseRequest(endpoint))
        await setup.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": [.string(endpoint)]])
    }

    @Test func anUnavailableDistributorIsRetriedThen502() async throws {
        let setup = try await start()
        let flaky = setup.distributor.endpoint(statuses: [503, 201])
        let down = setup.distributor.endpoint(statuses: [503])
        let recovered = try await setup.herald.notify(try synapseRequest(flaky))
        let failed = try await setup.herald.notify(try synapseRequest(down))
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(recovered.status == 200)
        #expect(setup.distributor.received(at: flaky).count == 2)
        #expect(failed.status == 502)
        #expect(failed.json?["rejected"] == [])
        #expect(setup.distributor.received(at: down).count == 2)
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="im.fluffychat.*",outcome="failed",reason="http_503"} 1"#))
    }

    @Test func theEndpointPolicyOfWebPushApplies() async throws {
        let setup = try await start(extra: "")  // https only, no private addresses
        let endpoint = setup.distributor.endpoint()
        let refused = try await setup.herald.notify(try synapseRequest(endpoint))
        let malformed = try await setup.herald.notify(try synapseRequest("not a url"))
        await setup.stop()
        #expect(refused.status == 200)
        #expect(refused.json == ["rejected": []])  // skipped, as Sygnal skips endpoints it may not reach
        #expect(setup.distributor.received.isEmpty)
        #expect(malformed.json == ["rejected": ["not a url"]])
    }

    @Test func aNotificationTooLargeForUnifiedPushLosesItsContentFirst() async throws {
        let setup = try await start()
        let endpoint = setup.distributor.endpoint()
        guard case .object(var root) = try synapseRequest(endpoint), case .object(var notification)? = root["notification"] else {
            return
        }
        notification["content"] = ["body": .string(String(repeating: "x", count: 5000)), "msgtype": "m.text"]
        root["notification"] = .object(notification)
        let response = try await setup.herald.notify(.object(root))
        await setup.stop()
        #expect(response.status == 200)
        let received = try #require(setup.distributor.received(at: endpoint).first)
        #expect(received.body.count <= 4096)
        #expect(received.json?["notification"]?["content"] == nil)
        #expect(received.json?["notification"]?["event_id"] == notification["event_id"])
    }

    @Test func discoveryIsAnsweredOnlyWhenAUnifiedPushAppIsConfigured() async throws {
        let setup = try await start()
        let withApp = try await setup.herald.request(.GET, "/_matrix/push/v1/notify")
        await setup.stop()
        let without = try await RunningGateway.start(
            gatewayYAML(apps: "  com.example.probe:\n    type: probe\n"), registry: .withProbe(Probe()))
        let noApp = try await without.request(.GET, "/_matrix/push/v1/notify")
        await without.stop()
        #expect(withApp.status == 200)
        #expect(withApp.json == ["unifiedpush": ["gateway": "matrix"]])
        #expect(noApp.status == 404)
        #expect(noApp.json?["errcode"] == "M_UNRECOGNIZED")
    }
}
