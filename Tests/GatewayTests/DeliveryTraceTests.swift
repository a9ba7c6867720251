import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@testable import Gateway

/// "Why didn't my phone ring?" (docs/operations.md): an operator asks any instance what became of
/// an event for a device, on the metrics listener (`GET /_herald/v1/deliveries`) or with
/// `herald trace`, and gets the upstream's answer, the attempts, the instance and the provider's
/// id for the message.
@Suite(.serialized)
struct DeliveryTraceTests {
    static let message = APNsEndToEndTests.message
    static var eventId: String { message["event_id"]?.stringValue ?? "" }

    func notify(_ herald: RunningGateway, _ keys: [String]) async throws -> TestResponse {
        try await herald.notify(notifyBody(Self.message, devices: keys.map { APNsEndToEndTests().device($0) }))
    }

    /// A GET with a bearer token.
    static func get(_ url: String, bearer: String) async throws -> TestResponse {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let collected = try await response.body.collect(upTo: 1 << 20)
        return TestResponse(status: Int(response.status.code), headers: response.headers, body: Array(collected.readableBytesView))
    }

    func escaped(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text }

    /// Delivered (with Apple's `apns-id`), rejected (410, with Apple's reason), failed after its
    /// retries; filtered by pushkey and by app; an unknown event has no delivery.
    @Test func theTraceShowsWhatTheUpstreamAnswered() async throws {
        let setup = try await APNsEndToEndTests().start(extra: "max_attempts: 2")
        let (ok, dead, down) = (APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey())
        setup.apns.script(APNsEndToEndTests.hex(dead), .fail(410, "Unregistered"))
        setup.apns.script(APNsEndToEndTests.hex(down), .fail(500, "InternalServerError"))
        let answer = try await notify(setup.herald, [ok, dead, down])
        let all = try await setup.herald.deliveries(event: Self.eventId)
        let one = try await setup.herald.deliveries(event: Self.eventId, query: "&pushkey=\(escaped(dead))")
        let byApp = try await setup.herald.deliveries(event: Self.eventId, query: "&app_id=com.example.apns")
        let otherApp = try await setup.herald.deliveries(event: Self.eventId, query: "&app_id=com.example.other")
        let unknown = try await setup.herald.trace(event: "$never-seen")
        await setup.stop()
        #expect(answer.status == 502)  // one device failed: the homeserver retries
        #expect(all.count == 3 && byApp.count == 3 && otherApp.isEmpty)
        let outcomes = Dictionary(uniqueKeysWithValues: all.compactMap { d in d["pushkey"]?.stringValue.map { ($0, d) } })
        let delivered = try #require(outcomes[Redaction.pushkey(ok)])
        #expect(delivered["outcome"]?.stringValue == "delivered")
        #expect(delivered["attempts"] == 1)
        let apnsId = setup.apns.received(token: APNsEndToEndTests.hex(ok)).first?.headers["apns-id"]
        #expect(delivered["provider_id"]?.stringValue != nil)
        #expect(apnsId == nil || delivered["provider_id"]?.stringValue == apnsId)
        #expect(delivered["instance"]?.stringValue?.contains(":") == true)
        #expect(delivered["finished_at"]?.stringValue?.hasSuffix("Z") == true)
        #expect(one.count == 1 && one.first?["outcome"]?.stringValue == "rejected")
        #expect(one.first?["reason"]?.stringValue == "Unregistered" || one.first?["detail"]?.stringValue?.contains("Unregistered") == true)
        let failed = try #require(outcomes[Redaction.pushkey(down)])
        #expect(failed["outcome"]?.stringValue == "failed" && failed["attempts"] == 2)
        #expect(all.allSatisfy { $0["pushkey"]?.stringValue?.hasSuffix("…") == true })
        #expect(!all.contains { JSONWriter.string($0).contains(ok) || JSONWriter.string($0).contains(dead) })
        #expect(unknown.status == 200 && unknown.json?["deliveries"] == [])
    }

    /// A delivery whose upstream has not answered is shown in flight, then with its outcome.
    /// Against APNs's development environment, the trace keeps `apns-unique-id` (what Apple's Push
    /// Notifications Console looks up), and a 410 says since when the token is not valid.
    @Test func theTraceKeepsAPNsUniqueIdAndWhenATokenStoppedBeingValid() async throws {
        let setup = try await APNsEndToEndTests().start()
        setup.apns.actAsDevelopment()
        let (ok, dead) = (APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey())
        setup.apns.script(APNsEndToEndTests.hex(dead), .fail(410, "Unregistered"))
        let answer = try await notify(setup.herald, [ok, dead])
        let delivered = try await setup.herald.deliveries(event: Self.eventId, query: "&pushkey=\(escaped(ok))")
        let rejected = try await setup.herald.deliveries(event: Self.eventId, query: "&pushkey=\(escaped(dead))")
        await setup.stop()
        #expect(answer.json == ["rejected": [.string(dead)]])
        let apnsId = setup.apns.received(token: APNsEndToEndTests.hex(ok)).first?.headers["apns-id"]
        let providerId = try #require(delivered.first?["provider_id"]?.stringValue)
        #expect(providerId != apnsId && UUID(uuidString: providerId) != nil && providerId == providerId.lowercased())
        #expect(rejected.first?["detail"]?.stringValue?.hasSuffix("the token has not been valid since 2025-10-09T08:53:20Z") == true)
    }

    @Test func aStalledDeliveryIsShownInFlight() async throws {
        let probe = Probe()
        let clock = ManualClock()
        // The product's `answer_within` (20 s), on the test's clock.
        let herald = try await RunningGateway.start(
            gatewayYAML(apps: "  com.example.probe:\n    type: probe\n", extra: "notify: {}"), registry: .withProbe(probe),
            clock: clock)
        let device: JSONValue = ["app_id": "com.example.probe", "pushkey": "hold-1"]
        async let answered = herald.notify(notifyBody(Self.message, devices: [device]))
        let armed = await eventually(within: .seconds(60)) { probe.active == 1 && clock.loopTimers(dueIn: .seconds(20)) >= 1 }
        clock.advance(by: .seconds(20))
        let first = try await answered
        let during = try await herald.deliveries(event: Self.eventId)
        probe.release()
        let done = await eventually(within: .seconds(60)) {
            (try? await herald.deliveries(event: Self.eventId))?.first?["outcome"]?.stringValue == "delivered"
        }
        await herald.stop()
        #expect(armed)
        #expect(first.status == 502)
        #expect(during.map { $0["outcome"]?.stringValue } == ["in_flight"])
        #expect(during.first?["finished_at"] == nil)
        #expect(done)
    }

    /// The endpoint's errors, and `admin.token_file`'s bearer token.
    @Test func theEndpointAsksForWhatItNeeds() async throws {
        let dir = temporaryDirectory()
        try "s3cret\n".write(toFile: "\(dir)/admin-token", atomically: true, encoding: .utf8)
        let probe = Probe()
        let herald = try await RunningGateway.start(
            gatewayYAML(apps: "  com.example.probe:\n    type: probe\n", extra: "admin:\n  token_file: \(dir)/admin-token"),
            registry: .withProbe(probe))
        let port = try #require(herald.gateway.metricsPort)
        let anonymous = try await herald.trace(event: "$e")
        let wrong = try await Self.get("http://127.0.0.1:\(port)/_herald/v1/deliveries?event_id=x", bearer: "nope")
        let missing = try await Self.get("http://127.0.0.1:\(port)/_herald/v1/deliveries", bearer: "s3cret")
        let both = try await Self.get(
            "http://127.0.0.1:\(port)/_herald/v1/deliveries?event_id=x&pushkey=a&app_id=b", bearer: "s3cret")
        let good = try await Self.get("http://127.0.0.1:\(port)/_herald/v1/deliveries?event_id=x", bearer: "s3cret")
        let posted = try await herald.request(.POST, "/_herald/v1/deliveries?event_id=x", body: [], port: port)
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(anonymous.status == 401 && anonymous.json?["errcode"]?.stringValue == "M_MISSING_TOKEN")
        #expect(wrong.status == 401 && wrong.json?["errcode"]?.stringValue == "M_UNKNOWN_TOKEN")
        #expect(missing.status == 400 && missing.json?["errcode"]?.stringValue == "M_MISSING_PARAM")
        #expect(both.status == 400 && both.json?["errcode"]?.stringValue == "M_INVALID_PARAM")
        #expect(good.status == 200 && good.json == ["event_id": "x", "deliveries": []])
        #expect(posted.status == 405 && posted.json?["errcode"]?.stringValue == "M_UNRECOGNIZED")
        #expect(metrics.contains("herald_"))  // the metrics themselves need no token

        let off = try await RunningGateway.start(
            gatewayYAML(apps: "  com.example.probe:\n    type: probe\n", extra: "notify:\n  repeat_window: 0"), registry: .withProbe(probe))
        let none = try await off.trace(event: "$e")
        await off.stop()
        #expect(none.status == 404 && none.json?["errcode"]?.stringValue == "M_NOT_FOUND")
    }

    /// `herald trace` asks the instance of its config and prints one line per delivery.
    @Test(.enabled(if: OperatorBinaryTests.binary != nil, "needs the herald executable"))
    func heraldTracePrintsTheDeliveries() async throws {
        let probe = Probe()
        let metricsPort = StatusDurabilityTests.freePort()
        let dir = temporaryDirectory()
        let yaml = gatewayYAML(apps: "  com.example.probe:\n    type: probe\n")
            .replacingOccurrences(of: "address: 127.0.0.1\n    port: 0", with: "address: 127.0.0.1\n    port: \(metricsPort)")
        let herald = try await RunningGateway.start(yaml, registry: .withProbe(probe))
        try yaml.write(toFile: "\(dir)/herald.yaml", atomically: true, encoding: .utf8)
        let device: JSONValue = ["app_id": "com.example.probe", "pushkey": "reject-me"]
        _ = try await herald.notify(notifyBody(Self.message, devices: [device]))
        let traced = try await OperatorBinaryTests.run(["trace", "--config", "\(dir)/herald.yaml", "--event-id", Self.eventId])
        let unknown = try await OperatorBinaryTests.run(["trace", "--config", "\(dir)/herald.yaml", "--event-id", "$nothing"])
        let byDevice = try await OperatorBinaryTests.run(["trace", "--config", "\(dir)/herald.yaml", "--pushkey", "reject-me"])
        let neither = try await OperatorBinaryTests.run(["trace", "--config", "\(dir)/herald.yaml"])
        await herald.stop()
        let down = try await OperatorBinaryTests.run(["trace", "--config", "\(dir)/herald.yaml", "--event-id", Self.eventId])
        #expect(traced.status == 0)
        #expect(traced.output.contains("event \(Self.eventId): 1 delivery"), "\(traced.output)")
        #expect(traced.output.contains("com.example.probe  reject…  rejected (invalid_pushkey: probe)"), "\(traced.output)")
        #expect(unknown.status == 0 && unknown.output.contains("no delivery recorded"))
        // Asked by device, each line names its event in its front end's words.
        #expect(byDevice.status == 0 && byDevice.output.contains("device reject…: 1 delivery"), "\(byDevice.output)")
        #expect(byDevice.output.contains("  event \(Self.eventId)  com.example.probe  reject…  rejected"), "\(byDevice.output)")
        #expect(neither.status == 64)
        #expect(down.status == 1)
    }

    /// `herald trace`'s errors, each on standard error with exit 1 (64 for a wrong call): no
    /// metrics listener in the config, an instance that does not answer, a wrong token, both
    /// filters at once.
    @Test(.enabled(if: OperatorBinaryTests.binary != nil, "needs the herald executable"))
    func heraldTraceSaysWhyItHasNoAnswer() async throws {
        let dir = temporaryDirectory()
        try "s3cret\n".write(toFile: "\(dir)/token", atomically: true, encoding: .utf8)
        try "wrong\n".write(toFile: "\(dir)/wrong", atomically: true, encoding: .utf8)
        let probe = Probe()
        let metricsPort = StatusDurabilityTests.freePort()
        let yaml = gatewayYAML(apps: "  com.example.probe:\n    type: probe\n", extra: "admin:\n  token_file: \(dir)/token")
            .replacingOccurrences(of: "address: 127.0.0.1\n    port: 0", with: "address: 127.0.0.1\n    port: \(metricsPort)")
        let herald = try await RunningGateway.start(yaml, registry: .withProbe(probe))
        try yaml.replacingOccurrences(of: "\(dir)/token", with: "\(dir)/wrong").write(
            toFile: "\(dir)/wrong.yaml", atomically: true, encoding: .utf8)
        try yaml.write(toFile: "\(dir)/right.yaml", atomically: true, encoding: .utf8)
        try yaml.replacingOccurrences(of: "enabled: true", with: "enabled: false").write(
            toFile: "\(dir)/off.yaml", atomically: true, encoding: .utf8)
        let wrong = try await Self.trace(["--config", "\(dir)/wrong.yaml", "--event-id", "$e"], directory: dir)
        let right = try await Self.trace(["--config", "\(dir)/right.yaml", "--event-id", "$e"], directory: dir)
        let both = try await Self.trace(
            ["--config", "\(dir)/right.yaml", "--event-id", "$e", "--pushkey", "k", "--app-id", "a"], directory: dir)
        await herald.stop()
        let gone = try await Self.trace(["--config", "\(dir)/right.yaml", "--event-id", "$e"], directory: dir)
        let off = try await Self.trace(["--config", "\(dir)/off.yaml", "--event-id", "$e"], directory: dir)
        #expect(right.status == 0 && right.output.contains("no delivery recorded"), "\(right)")
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("the metrics listener answered 401: the bearer token is not admin.token_file's"), "\(wrong)")
        #expect(both.status == 64 && both.error.contains("give --pushkey or --app-id, not both"), "\(both)")
        #expect(gone.status == 1 && gone.error.contains("no answer from the metrics listener at 127.0.0.1:\(metricsPort)"), "\(gone)")
        #expect(off.status == 1 && off.error.contains("metrics.prometheus is not enabled"), "\(off)")
    }

    /// `herald trace ARGUMENTS`: exit status, standard output and standard error.
    static func trace(_ arguments: [String], directory: String) async throws -> (status: Int32, output: String, error: String) {
        let errorFile = "\(directory)/trace-\(UUID().uuidString).err"
        let pipe = Pipe()
        let process = try ChildProcess.launch(
            try #require(OperatorBinaryTests.binary), ["trace"] + arguments, error: errorFile,
            outputDescriptor: pipe.fileHandleForWriting.fileDescriptor)
        try pipe.fileHandleForWriting.close()
        let reader = pipe.fileHandleForReading
        let data = await offPool { reader.readDataToEndOfFile() }
        let status = await process.exit()
        let error = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
        return (status, String(decoding: data, as: UTF8.self), error)
    }

    /// With the record in PostgreSQL, any instance answers for the fleet.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func anyInstanceOfAFleetAnswersForTheFleet() async throws {
        let fleet = try await OnceTests.Fleet.start(count: 2)
        let (ok, dead) = (APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey())
        fleet.apns.script(APNsEndToEndTests.hex(dead), .fail(410, "Unregistered"))
        let answer = try await notify(fleet.instances[0], [ok, dead])
        // The finish is written after the answer ("Once", docs/operations.md): the trace says the
        // outcome once it lands, `in_flight` until then.
        var seen = try await fleet.instances[1].deliveries(event: Self.eventId)
        await eventually {
            seen = (try? await fleet.instances[1].deliveries(event: Self.eventId)) ?? []
            return !seen.isEmpty && !seen.contains { $0["outcome"]?.stringValue == "in_flight" }
        }
        let one = try await fleet.instances[1].deliveries(event: Self.eventId, query: "&pushkey=\(escaped(ok))")
        await fleet.stop()
        #expect(answer.status == 200)
        #expect(Set(seen.compactMap { $0["outcome"]?.stringValue }) == ["delivered", "rejected"])
        #expect(one.count == 1 && one.first?["pushkey"]?.stringValue == Redaction.pushkey(ok))
        #expect(one.first?["provider_id"]?.stringValue != nil && one.first?["attempts"] == 1)
    }

    /// Two relays, each with its own fake APNs, on one PostgreSQL record (two instances of a fleet).
    static func relaysOnOneRecord() async throws -> (RelayEndToEndTests.Setup, RelayEndToEndTests.Setup) {
        let url = try await TestPostgres.createDatabase(prefix: "herald_trace")
        let top = "notify:\n  repeat_store: \(url)\n"
        return (try await RelayEndToEndTests().start(top: top), try await RelayEndToEndTests().start(top: top))
    }

    /// A front end with no event id an operator knows (the relay) is answered by the device token,
    /// by any instance of the fleet.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aRelayedMessageIsAnsweredByItsTokenFromAnotherInstance() async throws {
        let (first, second) = try await Self.relaysOnOneRecord()
        let (headers, body, _, _) = try RelayEndToEndTests.vector("aesgcm")
        let token = RelayEndToEndTests.token
        let sent = try await first.send("/relay-to/production/\(token)/acct-42", headers: headers, body: body)
        // The finish lands after the answer: the trace says `in_flight` until then.
        var seen = try await second.herald.deliveries(pushkey: token)
        await eventually {
            seen = (try? await second.herald.deliveries(pushkey: token)) ?? []
            return !seen.isEmpty && !seen.contains { $0["outcome"]?.stringValue == "in_flight" }
        }
        let byRequest = try await second.herald.deliveries(event: sent.headers.first(name: "X-Request-Id") ?? "")
        await first.stop()
        await second.stop()
        #expect(sent.status == 201)
        #expect(seen.count == 1 && byRequest == seen)
        #expect(seen.first?["front_end"] == "relay" && seen.first?["outcome"] == "delivered")
        #expect(seen.first?["provider_id"]?.stringValue == first.production.received.first?.headers["apns-id"])
    }
    /// The same message sent to a second instance while the first is sending it (a Mastodon retry
    /// behind a load balancer) is a 503 with `Retry-After`, never "APNs refused it", and is not
    /// sent twice; the retry after the first's finish is answered 201 from the record.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aRelayedMessageHeldByAnotherInstanceIsRetriedLater() async throws {
        let (first, second) = try await Self.relaysOnOneRecord()
        let (headers, body, _, _) = try RelayEndToEndTests.vector("aesgcm")
        let token = RelayEndToEndTests.token
        let path = "/relay-to/production/\(token)/acct-42"
        let release = TestEvent()
        first.production.script(token, .hold(release, then: .accept))
        async let sent = first.send(path, headers: headers, body: body)
        let arrived = await eventually(within: .seconds(60)) { first.production.arrived(token: token) >= 1 }
        let held = try await second.send(path, headers: headers, body: body)
        release.raise()
        let firstStatus = try await sent.status
        // Its finish lands after its answer (until then a retry is held as well): the retry that
        // `Retry-After` asked for comes once the trace is no longer `in_flight`.
        let landed = await eventually(within: .seconds(60)) {
            let seen = (try? await second.herald.deliveries(pushkey: token)) ?? []
            return !seen.isEmpty && !seen.contains { $0["outcome"]?.stringValue == "in_flight" }
        }
        let retried = try await second.send(path, headers: headers, body: body)
        await first.stop()
        await second.stop()
        #expect(arrived && firstStatus == 201 && landed)
        #expect(held.status == 503, "\(held.status) \(held.text)")
        #expect(held.headers.first(name: "Retry-After") != nil)
        #expect(retried.status == 201)
        #expect(first.production.received.count == 1 && second.production.received.isEmpty)
    }
}
