import Crypto
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import Logging
import NIOCore
import Testing

@testable import Gateway
@testable import HeraldHTTPServer
@testable import HeraldUpstream
@testable import Pushkins

/// Matrix → UnifiedPush through real sockets: Herald → a fake distributor that records what its
/// endpoints received (docs/compatibility/unifiedpush.md).
@Suite struct UnifiedPushEndToEndTests {
    struct Setup {
        let herald: InMemoryGateway
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
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
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
        let withApp = await setup.herald.request(.GET, "/_matrix/push/v1/notify")
        await setup.stop()
        let without = try await InMemoryGateway.start(
            gatewayYAML(apps: "  com.example.probe:\n    type: probe\n"), registry: .withProbe(Probe()))
        let noApp = await without.request(.GET, "/_matrix/push/v1/notify")
        await without.stop()
        #expect(withApp.status == 200)
        #expect(withApp.json == ["unifiedpush": ["gateway": "matrix"]])
        #expect(noApp.status == 404)
        #expect(noApp.json?["errcode"] == "M_UNRECOGNIZED")
    }
    /// Every push carries what RFC 8030 asks of a sender: `TTL` (the app's `ttl`, 86400 by
    /// default) and `Urgency` (`high` for the Matrix default `prio: high`, `normal` for `low`,
    /// `low` for a badge update without an event).
    @Test func aPlaintextPushCarriesTTLAndUrgency() async throws {
        let setup = try await start()
        let (message, low, badge) = (setup.distributor.endpoint(), setup.distributor.endpoint(), setup.distributor.endpoint())
        _ = try await setup.herald.notify(try synapseRequest(low))  // Synapse's recorded notify is `prio: low`
        guard case .object(var root) = try synapseRequest(message), case .object(var notification)? = root["notification"] else {
            return
        }
        notification["prio"] = "high"
        notification["event_id"] = "$high"
        root["notification"] = .object(notification)
        _ = try await setup.herald.notify(.object(root))
        _ = try await setup.herald.notify(
            notifyBody(["counts": ["unread": 1]], devices: [["app_id": "im.fluffychat.app", "pushkey": .string(badge)]]))
        await setup.stop()
        let sent = try #require(setup.distributor.received(at: message).first)
        #expect(sent.headers.first(name: "TTL") == "86400")
        #expect(sent.headers.first(name: "Urgency") == "high")
        #expect(sent.headers.first(name: "Content-Type") == "application/json")
        #expect(sent.headers.first(name: "Content-Encoding") == nil)
        #expect(setup.distributor.received(at: low).first?.headers.first(name: "Urgency") == "normal")
        #expect(setup.distributor.received(at: badge).first?.headers.first(name: "Urgency") == "low")
    }

    /// A pusher whose `data` holds its subscription's keys (beside the other members, or in
    /// `keys` as a browser's `PushSubscription.toJSON()` writes them) gets the same body
    /// encrypted `aes128gcm` and signed with the app's VAPID key: a distributor that is a Web
    /// Push service and restricted to that key accepts it, and the phone's connector decrypts the
    /// notification the homeserver sent.
    @Test(arguments: [false, true])
    func aPusherWithKeysIsEncryptedAndSignedAndItsConnectorDecryptsIt(nested: Bool) async throws {
        let dir = temporaryDirectory()
        let setup = try await start(
            extra: "allow_insecure_endpoints: true\nallow_private_endpoints: true\nvapid_private_key: \(dir)/vapid.pem\n"
                + "vapid_contact_email: push@example.org\nttl: 3600")
        let pushkin = try #require(setup.herald.gateway.pushkins.first { $0 is UnifiedPushPushkin } as? UnifiedPushPushkin)
        let key = try #require(pushkin.applicationServerKey)
        let subscription = setup.distributor.webPushEndpoint(restrictedTo: key)
        let keys: JSONObject = ["p256dh": .string(subscription.p256dh), "auth": .string(subscription.auth)]
        let request = try withData(try synapseRequest(subscription.endpoint), nested ? ["keys": .object(keys)] : keys)
        let response = try await setup.herald.notify(request)
        await setup.stop()
        #expect(response.status == 200 && response.json == ["rejected": []])
        let received = try #require(setup.distributor.received(at: subscription.endpoint).first)
        #expect(received.status == 201)
        #expect(received.headers.first(name: "Content-Encoding") == "aes128gcm")
        #expect(received.headers.first(name: "TTL") == "3600")
        #expect(received.headers.first(name: "Urgency") == "normal")  // the recorded notify's `prio: low`
        #expect(received.headers.first(name: "Authorization")?.hasSuffix("k=\(key)") == true)
        var expected = try #require(request["notification"]?.objectValue)
        expected.removeValue(forKey: "devices")
        #expect(received.json == ["notification": .object(expected)])
    }

    /// The request's one device given `data`.
    func withData(_ request: JSONValue, _ data: JSONObject) throws -> JSONValue {
        guard case .object(var root) = request, case .object(var notification)? = root["notification"],
            case .object(var device)? = notification["devices"]?.arrayValue?.first
        else { throw FixtureMissing(name: "synapse/message_full") }
        device["data"] = .object(data)
        notification["devices"] = [.object(device)]
        root["notification"] = .object(notification)
        return .object(root)
    }

    /// A distributor that is a plain Web Push service refuses a plaintext push (autopush's 400
    /// errno 110) and a restricted subscription's push without its VAPID key (401): the push is
    /// not a silent drop. Each is counted under its own reason and traced with the distributor's
    /// words; the homeserver is answered 200, since no retry can change it.
    @Test func aDistributorsRefusalNamesWhatItNeedsInTheMetricsAndTheTrace() async throws {
        let setup = try await start()
        let plain = setup.distributor.webPushEndpoint()
        let restricted = setup.distributor.webPushEndpoint(
            restrictedTo: Base64URL.encode(P256.Signing.PrivateKey().publicKey.x963Representation))
        var message = try synapseRequest(plain.endpoint)
        let plainAnswer = try await setup.herald.notify(message)
        guard
            case .object(var root) = try withData(
                try synapseRequest(restricted.endpoint), ["p256dh": .string(restricted.p256dh), "auth": .string(restricted.auth)]),
            case .object(var notification)? = root["notification"]
        else { return }
        notification["event_id"] = "$restricted"
        root["notification"] = .object(notification)
        message = .object(root)
        let restrictedAnswer = try await setup.herald.notify(message)
        let event = try #require(try synapseRequest(plain.endpoint)["notification"]?["event_id"]?.stringValue)
        let trace = try await setup.herald.deliveries(event: event)
        let restrictedTrace = try await setup.herald.deliveries(event: "$restricted")
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(plainAnswer.status == 200 && restrictedAnswer.status == 200)
        #expect(setup.distributor.received(at: plain.endpoint).map(\.status) == [400])  // refused for good: not retried
        #expect(setup.distributor.received(at: restricted.endpoint).map(\.status) == [401])
        #expect(trace.first?["outcome"] == "dropped" && trace.first?["reason"] == "needs_encryption")
        #expect(trace.first?["detail"]?.stringValue?.contains("Unknown Content-Encoding") == true)
        #expect(restrictedTrace.first?["reason"] == "needs_vapid")
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="im.fluffychat.*",outcome="dropped",reason="needs_encryption"} 1"#))
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="im.fluffychat.*",outcome="dropped",reason="needs_vapid"} 1"#))
    }

    /// The refusal's fix is logged once per origin and requirement, however many pushes it refuses.
    @Test func aRequirementIsLoggedOncePerOriginWithItsFix() {
        let lines = RecordingLogs()
        let logger = Logger(label: "t") { _ in lines }
        let warnings = PushServiceWarnings()
        let refusal = UpstreamResponse(
            status: 400, headers: [:], body: ByteBuffer(string: #"{"code":400,"errno":110,"message":"Unknown Content-Encoding"}"#))
        for origin in ["https://a.example", "https://a.example", "https://a.example", "https://b.example"] {
            let verdict = PushServiceVerdict.classify(
                refusal, pushkey: "k", origin: origin, context: DispatchContext(logger: logger), warnings: warnings)
            guard case .done(.dropped(let reason)) = verdict else { return #expect(Bool(false), "\(verdict)") }
            #expect(reason.label == "needs_encryption")
        }
        #expect(lines.messages.count == 2)
        #expect(lines.messages.allSatisfy { $0.contains("the client must give its subscription's keys") })
        #expect(PushServiceRequirement.of(status: 400, body: #"{"errno":111,"message":"Missing TTL Header"}"#) == .ttl)
        #expect(PushServiceRequirement.of(status: 403, body: #"{"reason":"BadJwtToken"}"#) == nil)
        #expect(PushServiceRequirement.of(status: 400, body: "bad request") == nil)
    }

    /// The recipe of docs/compatibility/unifiedpush.md: a UnifiedPush client served by a
    /// `type: webpush` app (pushkey = the subscription's P-256 key, `data.endpoint`,
    /// `data.auth`) reaches a distributor that is a Web Push service restricted to the app's key.
    @Test func aUnifiedPushClientServedAsAWebPushAppIsAccepted() async throws {
        let dir = temporaryDirectory()
        let distributor = try await FakeUnifiedPushDistributor.start()
        let apps = """
              im.fluffychat.app:
                type: webpush
                vapid_private_key: \(dir)/vapid.pem
                create_vapid_key_if_missing: true
                vapid_contact_email: push@example.org
                allow_insecure_endpoints: true
                allow_private_endpoints: true

            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        let pushkin = try #require(herald.gateway.pushkins.first { $0 is WebPushPushkin } as? WebPushPushkin)
        let subscription = distributor.webPushEndpoint(restrictedTo: pushkin.applicationServerKey)
        let device: JSONValue = [
            "app_id": "im.fluffychat.app", "pushkey": .string(subscription.p256dh),
            "data": ["endpoint": .string(subscription.endpoint), "auth": .string(subscription.auth)],
        ]
        let response = try await herald.notify(notifyBody(APNsEndToEndTests.message, devices: [device]))
        await herald.stop()
        await distributor.stop()
        #expect(response.json == ["rejected": []])
        let received = try #require(distributor.received(at: subscription.endpoint).first)
        #expect(received.status == 201)
        #expect(received.json?["room_id"] == APNsEndToEndTests.message["room_id"])
    }
}
