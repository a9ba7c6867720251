import Crypto
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Synchronization
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// Inputs that can never succeed are never a 5xx, and upstream answers that mean "our problem" never
/// delete pushers (issue: hardening).
@Suite struct HardeningTests {
    @Test func anEmptyMessageBodyIsNoContentForAPNsAsSygnalDoes() throws {
        for msgtype in ["m.text", "m.notice", "m.emote"] {
            let n = PushNotification(
                eventId: "$e", roomId: "!r", type: "m.room.message", sender: "@a:x", roomName: "Room",
                content: ["msgtype": .string(msgtype), "body": ""])
            #expect(APNsPayload.locKey(n)?.0 == "MSG_FROM_USER_IN_ROOM", "\(msgtype)")
            var direct = n
            direct.roomName = nil
            #expect(APNsPayload.locKey(direct)?.0 == "MSG_FROM_USER", "\(msgtype)")
        }
        let image = PushNotification(type: "m.room.message", sender: "@a:x", roomName: "Room", content: ["msgtype": "m.image", "body": ""])
        #expect(APNsPayload.locKey(image)?.0 == "IMAGE_FROM_USER_IN_ROOM")
    }

    @Test func aCollapseIdIsAlwaysAValidHeaderValue() {
        #expect(APNsPushkin.collapseId("$abc:example.org") == "$abc:example.org")
        let withControl = APNsPushkin.collapseId("$abc\r\ninjected: yes")
        #expect(withControl.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F })
        #expect(withControl.count == 43)
        #expect(APNsPushkin.collapseId("$é") != "$é")
    }

    @Test func aControlCharacterInTheEventIdOrAnOversizedTokenIsNotA502() async throws {
        let dir = temporaryDirectory()
        let pki = try TestPKI(directory: dir)
        let key = P256KeyFile.write(to: "\(dir)/k.p8")
        let apns = try await FakeAPNs.start(pki: pki, topic: "t", auth: .token(keyId: "K", teamId: "T", publicKey: key))
        let apps = """
              com.example.apns:
                type: apns
                keyfile: \(dir)/k.p8
                key_id: K
                team_id: T
                topic: t
                base_url: \(apns.baseURL)
                tls_ca_file: \(pki.caFile)

            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        let good = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let huge = Data((0..<150).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let message: JSONObject = [
            "event_id": "$e\u{01}\n", "room_id": "!r", "type": "m.room.message", "content": ["msgtype": "m.text", "body": "hi"],
        ]
        let controlled = try await herald.notify(notifyBody(message, devices: [["app_id": "com.example.apns", "pushkey": .string(good)]]))
        let oversized = try await herald.notify(notifyBody(message, devices: [["app_id": "com.example.apns", "pushkey": .string(huge)]]))
        await herald.stop()
        await apns.stop()
        #expect(controlled.status == 200)
        #expect(controlled.json == ["rejected": []])
        #expect(apns.received.count == 1)  // the oversized token made no upstream call
        #expect(apns.received.first?.headers["apns-collapse-id"]?.count == 43)
        #expect(oversized.status == 200)
        #expect(oversized.json == ["rejected": [.string(huge)]])
    }

    @Test func aLegacyFCMEndpointAnswering404FailsTheDevicesInsteadOfDeletingThem() async throws {
        let gone = try await FakeUnifiedPushDistributor.start()  // answers 404 on /fcm/send, as Google's does now
        let apps = """
              com.example.legacy:
                type: gcm
                api_version: legacy
                api_key: k
                base_url: \(gone.baseURL)
                max_attempts: 1

            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        let response = try await herald.notify(
            notifyBody(
                ["event_id": "$e", "room_id": "!r", "type": "m.room.message"],
                devices: [["app_id": "com.example.legacy", "pushkey": "a"], ["app_id": "com.example.legacy", "pushkey": "b"]]))
        await herald.stop()
        await gone.stop()
        #expect(gone.received.first?.path == "/fcm/send")
        #expect(response.status == 502)
        #expect(response.json?["rejected"] == [])  // no pusher deleted
    }
}

extension HardeningTests {
    @Test func aRefusedConnectionFailsAtOnceAndThe502NamesNoAddress() async throws {
        let dir = temporaryDirectory()
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: webpushApp("com.example.webpush", directory: dir, extra: "max_attempts: 3\nconnect_timeout: 300")))
        let sub = try await FakeWebPushService.start()
        let s = sub.subscribe()
        let device: JSONValue = [
            "app_id": "com.example.webpush", "pushkey": .string(s.p256dh),
            "data": ["endpoint": "http://127.0.0.1:1/push/x", "auth": .string(s.auth)],
        ]
        // Three refused attempts, not three 300 s connect timeouts: those would leave the notify
        // unanswered past the client's 60 s, and it would fail.
        let response = try await herald.notify(notifyBody(["event_id": "$e"], devices: [device]))
        let metrics = try await herald.metricsText()
        await herald.stop()
        // Refused connections never carried the request: retrying them cannot send a push twice.
        #expect(metrics.contains(#"herald_upstream_resent_unanswered_total{pushkin="com.example.webpush"} 0"#))
        await sub.stop()
        #expect(response.status == 502)
        let text = response.json?["error"]?.stringValue ?? ""
        #expect(text == "Failed to dispatch to 1 device(s): network error: the upstream could not be reached")
        #expect(!text.contains("127.0.0.1") && !text.contains("refused"))
    }

    @Test func anEndpointWhoseHostDoesNotResolveFailsForNowInsteadOfBeingSkipped() async throws {
        let dir = temporaryDirectory()
        let apps = """
              com.example.webpush:
                type: webpush
                vapid_private_key: \(dir)/vapid.pem
                create_vapid_key_if_missing: true
                vapid_contact_email: ops@example.org
                max_attempts: 1

            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
        let sub = try await FakeWebPushService.start()
        let s = sub.subscribe()
        let device: JSONValue = [
            "app_id": "com.example.webpush", "pushkey": .string(s.p256dh),
            "data": ["endpoint": "https://push.does-not-exist.invalid/x", "auth": .string(s.auth)],
        ]
        let response = try await herald.notify(notifyBody(["event_id": "$e"], devices: [device]))
        await herald.stop()
        await sub.stop()
        #expect(response.status == 502)  // the homeserver retries; the push is not lost
        #expect(response.json?["rejected"] == [])
    }
}

extension HardeningTests {
    @Test func anAllowedEndpointNamedExplicitlyMayBePrivateAndRefusalsAreCounted() async throws {
        let service = try await FakeWebPushService.start()
        let port = service.server.port
        func run(_ entry: String) async throws -> (TestResponse, String, [String]) {
            let apps = DNSRebindingTests.httpWebPushApp(extra: "allowed_endpoints: ['\(entry)']")
            let (config, diagnostics) = try ConfigLoading.parse(gatewayYAML(apps: apps))
            _ = config
            let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps))
            let s = service.subscribe()
            let device: JSONValue = [
                "app_id": "com.example.webpush", "pushkey": .string(s.p256dh),
                "data": ["endpoint": .string(s.endpoint), "auth": .string(s.auth)],
            ]
            let response = try await herald.notify(notifyBody(["event_id": "$e"], devices: [device]))
            let metrics = try await herald.metricsText()
            await herald.stop()
            let validated = Gateway(
                config: config, diagnostics: diagnostics, logger: .init(label: "t"), readOnly: true, clock: SystemClock())
            await validated.close()
            return (response, metrics, diagnostics.warnings)
        }
        let (explicitly, _, warnings) = try await run("127.0.0.1:\(port)")
        let (byGlob, metrics, _) = try await run("127.0.0.*")
        await service.stop()
        #expect(explicitly.json == ["rejected": []])
        #expect(service.received.count == 1)  // delivered to the explicitly named private host
        #expect(warnings.contains { $0.contains("'127.0.0.1:\(port)' names a host") })
        #expect(byGlob.json == ["rejected": []])  // skipped, not delivered
        #expect(metrics.contains(#"herald_endpoint_refusals_total{pushkin="com.example.webpush"} 1"#))
    }
}

/// A fresh APNs signing key written as PEM; its public key for the fake.
enum P256KeyFile {
    static func write(to path: String) -> P256.Signing.PublicKey {
        let key = P256.Signing.PrivateKey()
        try? key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        return key.publicKey
    }
}

/// The HTTP surface against clients that do not follow the happy path.
@Suite struct HTTPEdgeTests {
    func start() async throws -> RunningGateway {
        try await RunningGateway.start(gatewayYAML(apps: "  com.example.probe:\n    type: probe\n"), registry: .withProbe(Probe()))
    }

    @Test func aRequestTheParserCannotReadGetsMatrixJSON() async throws {
        let herald = try await start()
        let answer = await RawHTTP.exchangeOffPool(port: herald.gateway.ports[0], head: "NOT A REQUEST\u{01}\r\n\r\n")
        let after = try await herald.request(.GET, "/health")
        await herald.stop()
        #expect(answer.hasPrefix("HTTP/1.1 400"))
        let body = try #require(answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) })
        #expect(try JSONParser.parse(Array(body.utf8)) == ["errcode": "M_UNRECOGNIZED", "error": "Malformed HTTP request"])
        #expect(after.status == 200)
    }

    @Test func expect100ContinueGetsItsInterimAnswerThenTheResponse() async throws {
        let herald = try await start()
        let body = #"{"notification": {"devices": [{"app_id": "com.example.probe", "pushkey": "accept"}]}}"#
        let answer = await RawHTTP.exchangeOffPool(
            port: herald.gateway.ports[0],
            head:
                "POST /_matrix/push/v1/notify HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n",
            chunks: [Array(body.utf8)], waitFirst: true)
        await herald.stop()
        #expect(answer.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK"))
        #expect(answer.hasSuffix(#"{"rejected":[]}"#))
    }

    @Test func a413StaysReadableForABodyOfSeveralMiB() async throws {
        let herald = try await start()
        let chunk = [UInt8](repeating: 0x20, count: 64 * 1024)
        let answer = await RawHTTP.exchangeOffPool(
            port: herald.gateway.ports[0], head: "POST /_matrix/push/v1/notify HTTP/1.1\r\nHost: x\r\nContent-Length: \(5 << 20)\r\n\r\n",
            chunks: Array(repeating: chunk, count: 80), sendAll: true)
        await herald.stop()
        #expect(answer.hasPrefix("HTTP/1.1 413"))
        #expect(answer.contains("M_TOO_LARGE"))
    }
}

extension HTTPEdgeTests {
    @Test func aTricklingUpstreamCannotHoldANotifyPastItsRequestTimeout() async throws {
        let trickle = try await TrickleServer.start()
        let dir = temporaryDirectory()
        let clock = ManualClock()
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: webpushApp("com.example.webpush", directory: dir, extra: "max_attempts: 2\nrequest_timeout: 10")),
            clock: clock)
        let sub = try await FakeWebPushService.start()
        let s = sub.subscribe()
        let device: JSONValue = [
            "app_id": "com.example.webpush", "pushkey": .string(s.p256dh),
            "data": ["endpoint": .string("\(trickle.baseURL)/push"), "auth": .string(s.auth)],
        ]
        // Two attempts, each cut at `request_timeout` (as shipped, 10 s, on the test's clock) while
        // the body trickles in: the endless trickle would otherwise leave the notify unanswered.
        async let answered = herald.notify(notifyBody(["event_id": "$e"], devices: [device]))
        let timedOut = await timingOut(clock, attempts: 2) { trickle.requests }
        let response = try await answered
        #expect(timedOut)
        let metrics = try await herald.metricsText()
        await herald.stop()
        // The request was sent and its answer never completed: the second attempt may deliver twice.
        #expect(metrics.contains(#"herald_upstream_resent_unanswered_total{pushkin="com.example.webpush"} 1"#))
        await sub.stop()
        await trickle.stop()
        #expect(response.status == 502)
    }
}

/// Inbound limits: connections, slow clients, request bodies held in memory.
@Suite struct InboundLimitTests {
    func start(_ http: String, clock: any HeraldClock = SystemClock()) async throws -> RunningGateway {
        let yaml = gatewayYAML(apps: "  com.example.probe:\n    type: probe\n")
            .replacingOccurrences(of: "  shutdown_grace_period: 10\n", with: "  shutdown_grace_period: 10\n" + http)
        return try await RunningGateway.start(yaml, registry: .withProbe(Probe()), clock: clock)
    }

    @Test func connectionsBeyondTheLimitAreTurnedAwayWithRetryAfter() async throws {
        let herald = try await start("  max_connections: 2\n")
        let port = herald.gateway.ports[0]
        let idle = [RawHTTP.openIdle(port: port), RawHTTP.openIdle(port: port)]
        #expect(await eventually { herald.gateway.openConnections == 2 })
        let turnedAway = await RawHTTP.exchangeOffPool(port: port, head: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        for fd in idle { close(fd) }
        // The server frees their slots once it sees them closed: on a loaded machine that can take
        // longer than a fixed pause, so the request is made again (turned away meanwhile) for up to 30 s.
        var after = try await herald.request(.GET, "/health")
        try await eventually(within: .seconds(30)) {
            after = try await herald.request(.GET, "/health")
            return after.status == 200
        }
        await herald.stop()
        #expect(turnedAway.hasPrefix("HTTP/1.1 503"))
        #expect(turnedAway.contains("Retry-After: 1"))
        #expect(turnedAway.contains("M_LIMIT_EXCEEDED"))
        #expect(after.status == 200)
    }

    /// docs/operations.md, "Rolling restart": on shutdown, a connection accepted before its first
    /// request arrived is answered (and then closed: `sendOffPool` reads until it is), not closed
    /// under the request; one that never sends is closed after the wait.
    @Test func onShutdownAConnectionWhoseFirstRequestIsOnItsWayIsAnswered() async throws {
        let herald = try await start("  shutdown_first_request_wait: 5\n")
        let port = herald.gateway.ports[0]
        let (fresh, silent) = (RawHTTP.openIdle(port: port), RawHTTP.openIdle(port: port))
        #expect(await eventually { herald.gateway.openConnections == 2 })  // both accepted
        async let stopped: Void = herald.stop()
        #expect(await eventually { !herald.gateway.accepting })  // the shutdown has begun
        let answer = await RawHTTP.sendOffPool(fd: fresh, head: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        await stopped
        let unanswered = await RawHTTP.sendOffPool(fd: silent, head: "")
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        #expect(unanswered == "")  // closed by the server once the wait was over
    }

    /// Connections that arrive while the listener closes are closed, not left open without an
    /// owner (SwiftNIO traps on those: the whole process would end, requests in progress with it).
    @Test func connectionsArrivingWhileTheListenerClosesAreClosed() async throws {
        for _ in 0..<10 {
            let herald = try await start("  shutdown_first_request_wait: 0\n")
            let port = herald.gateway.ports[0]
            let connecting = Mutex(true)
            let made = Mutex(0)
            async let attempts = offPool {
                var count = 0
                while connecting.withLock({ $0 }) {
                    let fd = RawHTTP.openIdle(port: port)
                    if fd >= 0 { close(fd) }
                    count += 1
                    made.withLock { $0 = count }
                }
                return count
            }
            await eventually { made.withLock { $0 } >= 10 }  // connections are arriving
            await herald.stop()
            connecting.withLock { $0 = false }
            let done = await attempts
            #expect(done > 0)
        }
    }

    /// A head that never completes is cut at `request_read_timeout` (as shipped, 30 s, on the
    /// test's clock) from its first byte.
    @Test func aClientTricklingItsRequestHeadIsCut() async throws {
        let clock = ManualClock()
        let herald = try await start("", clock: clock)
        // Cut by the server: the client gives up on its own after 60 s with no answer at all.
        async let cut = RawHTTP.exchangeOffPool(
            port: herald.gateway.ports[0], head: "POST /_matrix/push/v1/notify HTTP/1.1\r\nHost: x\r\n")
        let armed = await eventually { clock.loopTimers(dueIn: .seconds(30)) >= 1 }
        clock.advance(by: .seconds(29))
        let early = clock.loopTimers(dueIn: .seconds(1))
        clock.advance(by: .seconds(1))
        let answer = await cut
        let after = try await herald.request(.GET, "/health")
        await herald.stop()
        #expect(armed && early == 1)
        #expect(answer.hasPrefix("HTTP/1.1 408"))
        #expect(after.status == 200)
    }

    @Test func requestBodiesBeyondTheMemoryBoundAreAnswered503() async throws {
        let herald = try await start("  max_buffered_body_bytes: 2048\n")
        let body = String(repeating: " ", count: 4000)
        let answer = await RawHTTP.exchangeOffPool(
            port: herald.gateway.ports[0],
            head: "POST /_matrix/push/v1/notify HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n",
            chunks: [Array(body.utf8)])
        let small = try await herald.notify(notifyBody(devices: [["app_id": "com.example.probe", "pushkey": "accept"]]))
        await herald.stop()
        #expect(answer.hasPrefix("HTTP/1.1 503"))
        #expect(answer.contains("Retry-After: 1"))
        #expect(small.status == 200)  // the budget was given back
        #expect(herald.gateway.config.http.maxBufferedBodyBytes == 2048)
    }
}

/// DNS rebinding: the endpoint's name answers a public address to one lookup and a loopback
/// address to the next. Staged with a resolver; no test here ever lets a connection go to the
/// public address it answers (only loopback is a target on a test machine).
@Suite struct DNSRebindingTests {
    final class CountingResolver: Sendable {
        let lookups = Mutex(0)
        let answer: String
        init(answer: String = "93.184.216.34") { self.answer = answer }
        var resolver: HostResolver {
            HostResolver { _, _ in
                self.lookups.withLock { $0 += 1 }
                return .success([self.answer])
            }
        }
    }

    /// A Web Push app that may use http endpoints but keeps the default address policy.
    static func httpWebPushApp(extra: String = "") -> String {
        """
          com.example.webpush:
            type: webpush
            vapid_private_key: \(temporaryDirectory())/vapid.pem
            create_vapid_key_if_missing: true
            vapid_contact_email: ops@example.org
            allow_insecure_endpoints: true
            \(extra)

        """
    }

    static func device(_ s: FakeWebPushService.Subscription, endpoint: String) -> JSONValue {
        ["app_id": "com.example.webpush", "pushkey": .string(s.p256dh), "data": ["endpoint": .string(endpoint), "auth": .string(s.auth)]]
    }

    @Test func aNameThatRebindsToLoopbackIsNeverConnectedToBecauseEachConnectionChecksItsOwnLookup() async throws {
        // The name's later answer is loopback: the lookup a connection is opened with is the one
        // classified, so a name cannot pass a check with one answer and connect with another.
        let service = try await FakeWebPushService.start()
        let counting = CountingResolver(answer: "127.0.0.1")
        var registry = PushkinRegistry.standard
        registry.hostResolver = counting.resolver
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: Self.httpWebPushApp()), registry: registry)
        let s = service.subscribe()
        let device = Self.device(s, endpoint: "http://push.example.net:\(service.server.port)\(s.path)")
        let first = try await herald.notify(notifyBody(["event_id": "$e1"], devices: [device]))
        let second = try await herald.notify(notifyBody(["event_id": "$e2"], devices: [device]))
        let metrics = try await herald.metricsText()
        await herald.stop()
        await service.stop()
        for response in [first, second] {
            #expect(response.status == 200)
            #expect(response.json == ["rejected": []])  // refused by policy: skipped, the pusher is kept
        }
        #expect(service.received.isEmpty)  // not one byte of a request reached loopback
        #expect(metrics.contains(#"herald_endpoint_refusals_total{pushkin="com.example.webpush"} 2"#))
        #expect(counting.lookups.withLock { $0 } == 2)  // one lookup per connection attempt, no verdict kept
    }

    @Test func throughTheProxyEveryPushResolvesTheNameAfreshAndAPrivateAnswerIsRefused() async throws {
        let proxy = try await FakeConnectProxy.start()
        let service = try await FakeWebPushService.start()
        let counting = CountingResolver(answer: "127.0.0.1")
        var registry = PushkinRegistry.standard
        registry.hostResolver = counting.resolver
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: Self.httpWebPushApp(), extra: "proxy: 'http://127.0.0.1:\(proxy.port)'"), registry: registry)
        let s = service.subscribe()
        let device = Self.device(s, endpoint: "http://push.example.net:\(service.server.port)\(s.path)")
        let first = try await herald.notify(notifyBody(["event_id": "$e1"], devices: [device]))
        let second = try await herald.notify(notifyBody(["event_id": "$e2"], devices: [device]))
        await herald.stop()
        await service.stop()
        for response in [first, second] { #expect(response.json == ["rejected": []]) }
        #expect(proxy.connects.isEmpty)  // refused before anything was sent to the proxy
        #expect(counting.lookups.withLock { $0 } == 2)  // no verdict kept between pushes
    }

    @Test func throughTheProxyAPublicAnswerIsSentThroughIt() async throws {
        let proxy = try await FakeConnectProxy.start()
        let service = try await FakeWebPushService.start()
        var registry = PushkinRegistry.standard
        registry.hostResolver = CountingResolver().resolver
        let app = Self.httpWebPushApp()
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: app, extra: "proxy: 'http://127.0.0.1:\(proxy.port)'"), registry: registry)
        let s = service.subscribe()
        let response = try await herald.notify(
            notifyBody(["event_id": "$e"], devices: [Self.device(s, endpoint: "http://localhost:\(service.server.port)\(s.path)")]))
        await herald.stop()
        await service.stop()
        #expect(response.json == ["rejected": []])
        // The proxy's peer is not Herald's to check. On a loaded machine a tunnel that took longer
        // than the connect timeout is given up and a second one made: every tunnel goes there.
        let targets = proxy.connects.map(\.target)
        #expect(!targets.isEmpty && targets.count <= 2)
        #expect(targets.allSatisfy { $0 == "localhost:\(service.server.port)" }, "\(targets)")
        #expect(service.received.count == 1)
    }

    @Test func withAllowPrivateEndpointsTheSameURLIsReached() async throws {
        // The peer check applies only where the policy checked addresses.
        let service = try await FakeWebPushService.start()
        var registry = PushkinRegistry.standard
        registry.hostResolver = CountingResolver().resolver
        let dir = temporaryDirectory()
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: webpushApp("com.example.webpush", directory: dir)), registry: registry)
        let s = service.subscribe()
        let device: JSONValue = [
            "app_id": "com.example.webpush", "pushkey": .string(s.p256dh),
            "data": ["endpoint": .string("http://localhost:\(service.server.port)\(s.path)"), "auth": .string(s.auth)],
        ]
        let response = try await herald.notify(notifyBody(["event_id": "$e"], devices: [device]))
        await herald.stop()
        await service.stop()
        #expect(response.json == ["rejected": []])
        #expect(service.received.count == 1)
    }
}
