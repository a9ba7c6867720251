import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import NIOCore
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// How one request's devices are routed, dispatched and answered (docs/compatibility/matrix.md).
@Suite struct DispatchTests {
    static let probeApps = """
          com.example.probe:
            type: probe
          com.example.other:
            type: probe
        """

    func device(_ pushkey: String, app: String = "com.example.probe") -> JSONValue {
        ["app_id": .string(app), "pushkey": .string(pushkey)]
    }

    @Test func rejectedDevicesAreRejectedInRequestOrder() async throws {
        let probe = Probe()
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: Self.probeApps), registry: .withProbe(probe))
        let response = try await herald.notify(
            notifyBody(devices: [device("reject-1"), device("accept"), device("reject-2", app: "com.example.other"), device("skip")]))
        await herald.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": ["reject-1", "reject-2"]])
        #expect(Set(probe.seen) == ["reject-1", "accept", "reject-2", "skip"])
    }

    @Test func devicesOfOneRequestAreDispatchedConcurrently() async throws {
        let probe = Probe()
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: Self.probeApps), registry: .withProbe(probe))
        async let response = herald.notify(
            notifyBody(devices: [device("hold-1"), device("hold-2"), device("hold-3", app: "com.example.other")]))
        await probe.waitForActive(3)
        let concurrent = probe.active
        probe.release()
        let status = try await response.status
        await herald.stop()
        #expect(status == 200)
        #expect(concurrent == 3)
    }

    /// docs/architecture.md, "One thread per request": a request is handled on its connection's
    /// event loop, devices and all, not handed to Swift's cooperative pool.
    @Test func aRequestIsHandledOnItsConnectionsEventLoop() async throws {
        let probe = Probe()
        let herald = try await RunningGateway.start(gatewayYAML(apps: Self.probeApps), registry: .withProbe(probe))
        let response = try await herald.notify(
            notifyBody(devices: [device("accept-1"), device("accept-2"), device("accept-3", app: "com.example.other")]))
        await herald.stop()
        #expect(response.status == 200)
        #expect(probe.loops.count == 3)
        #expect(probe.loops.allSatisfy { $0 != nil })
        #expect(Set(probe.loops).count == 1)
    }

    @Test(arguments: [["fail", "reject"], ["reject", "fail"], ["accept", "fail", "reject"]])
    func aFailedDeviceGives502ButKeepsTheKnownRejections(_ keys: [String]) async throws {
        let probe = Probe()
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: Self.probeApps), registry: .withProbe(probe))
        let response = try await herald.notify(notifyBody(devices: keys.map { device($0) }))
        await herald.stop()
        #expect(response.status == 502)
        #expect(response.json?["errcode"] == "M_UNKNOWN")
        #expect(response.json?["rejected"] == ["reject"])
        #expect(probe.seen.count == keys.count)  // every device was tried
    }

    @Test func droppedMessagesDoNotFailTheRequest() async throws {
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: Self.probeApps), registry: .withProbe(Probe()))
        let response = try await herald.notify(notifyBody(devices: [device("drop"), device("reject")]))
        await herald.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": ["reject"]])
    }

    /// Each outcome lands at its device's position however the devices split: one pushkin's
    /// devices first (one group covering them all), then a device routed nowhere, a second
    /// pushkin's, and the first pushkin's again.
    @Test(arguments: [0, 1, 2, 3, 4])
    func outcomesKeepTheirDevicesPositionsAcrossGroups(first: Int) async throws {
        let probe = Probe()
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: Self.probeApps), registry: .withProbe(probe))
        var devices = [
            device("reject-a1"), device("accept-a2"), device("reject-x", app: "org.nowhere"),
            device("reject-b1", app: "com.example.other"), device("accept-b2", app: "com.example.other"), device("reject-a3"),
        ]
        devices = Array(devices[first...] + devices[..<first])
        let expected = devices.compactMap { $0["pushkey"]?.stringValue }.filter { $0.hasPrefix("reject") }
        let response = try await herald.notify(notifyBody(devices: devices))
        await herald.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": .array(expected.map { .string($0) })])
        #expect(Set(probe.seen) == ["reject-a1", "accept-a2", "reject-b1", "accept-b2", "reject-a3"])
    }

    @Test func appIdRoutingExactThenSingleGlobElseRejectedWithoutDispatch() async throws {
        let probe = Probe()
        let apps = """
              com.example.apns:
                type: probe
              '*.example.*':
                type: probe
              'com.example.a*':
                type: probe
            """
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps), registry: .withProbe(probe))
        let exact = try await herald.notify(notifyBody(devices: [device("k-exact", app: "com.example.apns")]))
        let glob = try await herald.notify(notifyBody(devices: [device("k-glob", app: "com.example.bpns")]))
        let ambiguous = try await herald.notify(notifyBody(devices: [device("k-ambiguous", app: "com.example.apns2")]))
        let unknown = try await herald.notify(notifyBody(devices: [device("k-unknown", app: "org.other.app")]))
        let caseDiffers = try await herald.notify(notifyBody(devices: [device("k-case", app: "COM.EXAMPLE.APNS")]))
        await herald.stop()
        #expect(exact.json == ["rejected": []])
        #expect(glob.json == ["rejected": []])
        #expect(ambiguous.json == ["rejected": ["k-ambiguous"]])
        #expect(unknown.json == ["rejected": ["k-unknown"]])
        #expect(caseDiffers.json == ["rejected": ["k-case"]])
        #expect(probe.seen == ["k-exact", "k-glob"])
    }

    /// The app's own limit is a pause with an end: 429 with `Retry-After`, `M_LIMIT_EXCEEDED`.
    @Test func inflightRequestLimitFailsFastWith429AndIsCounted() async throws {
        let probe = Probe()
        let apps = "  com.example.probe:\n    type: probe\n    inflight_request_limit: 1\n"
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps), registry: .withProbe(probe))
        async let first = herald.notify(notifyBody(devices: [device("hold")]))
        await probe.waitForActive(1)
        let second = try await herald.notify(notifyBody(devices: [device("accept")]))
        probe.release()
        let firstResponse = try await first
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(firstResponse.status == 200)
        #expect(second.status == 429)
        #expect(second.headers.first(name: "Retry-After") == "1")
        #expect(second.json?["errcode"] == "M_LIMIT_EXCEEDED" && second.json?["retry_after_ms"] == 1000)
        #expect(probe.seen == ["hold"])
        #expect(metrics.contains(#"sygnal_inflight_request_limit_drop_total{pushkin="com.example.probe"} 1"#))
    }

    @Test func aRequestWithMoreDevicesThanTheLimitWaitsForItsOwnSlots() async throws {
        let probe = Probe()
        let apps = "  com.example.probe:\n    type: probe\n    inflight_request_limit: 2\n"
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps), registry: .withProbe(probe))
        let response = try await herald.notify(notifyBody(devices: (1...5).map { device("accept-\($0)") }))
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(response.status == 200)
        #expect(response.json == ["rejected": []])
        #expect(probe.seen.count == 5)
        #expect(probe.maxActive <= 2)  // never more at once than the limit
        #expect(metrics.contains(#"sygnal_inflight_request_limit_drop_total{pushkin="com.example.probe"} 0"#))
    }

    /// `herald send-test` goes through the dispatcher `/notify` uses: the app's in-flight limit
    /// holds for it, and its outcome is counted.
    @Test func sendTestGoesThroughTheDispatcherWithItsLimitAndMetrics() async throws {
        let probe = Probe()
        let apps = "  com.example.probe:\n    type: probe\n    inflight_request_limit: 1\n"
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: apps), registry: .withProbe(probe))
        async let held = herald.notify(notifyBody(devices: [device("hold")]))
        await probe.waitForActive(1)
        let shed = await herald.gateway.sendTest(appId: "com.example.probe", pushkey: "accept")
        probe.release()
        _ = try await held
        let sent = await herald.gateway.sendTest(appId: "com.example.probe", pushkey: "reject")
        let unknown = await herald.gateway.sendTest(appId: "com.example.nobody", pushkey: "accept")
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(shed.outcome == .failed(reason: .inflightLimit))
        #expect(shed.app == "com.example.probe")
        #expect(sent.wouldReject)
        #expect(unknown.app == nil && unknown.outcome == .rejected(reason: .unknownAppId))
        #expect(probe.seen == ["hold", "reject"])
        #expect(metrics.contains(#"sygnal_inflight_request_limit_drop_total{pushkin="com.example.probe"} 1"#))
        #expect(metrics.contains(#"herald_rejected_pushkeys_total{pushkin="com.example.probe"} 1"#))
    }

    @Test func metricsCountRequestsDevicesAndOutcomes() async throws {
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: Self.probeApps), registry: .withProbe(Probe()))
        _ = try await herald.notify(notifyBody(devices: [device("reject"), device("accept"), device("fail")]))
        _ = try await herald.notify("{}")
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(metrics.contains("sygnal_notifications_received_total 1"))
        #expect(metrics.contains("sygnal_notifications_devices_received_total 3"))
        #expect(metrics.contains(#"sygnal_pushgateway_status_codes_total{code="502"} 1"#))
        #expect(metrics.contains(#"sygnal_pushgateway_status_codes_total{code="400"} 1"#))
        #expect(metrics.contains(#"herald_rejected_pushkeys_total{pushkin="com.example.probe"} 1"#))
        #expect(metrics.contains(#"herald_failed_devices_total{pushkin="com.example.probe"} 1"#))
        #expect(metrics.contains(#"sygnal_per_pushkin_type_total{pushkin="com.example.probe"} 3"#))
        #expect(metrics.contains("process_resident_memory_bytes"))
        #expect(metrics.contains("sygnal_notify_time_bucket"))
    }

    @Test func shutdownDrainsRequestsInProgressAndThenStopsListening() async throws {
        let probe = Probe()
        let herald = try await RunningGateway.start(gatewayYAML(apps: Self.probeApps), registry: .withProbe(probe))
        async let inFlight = herald.notify(notifyBody(devices: [device("hold")]))
        await probe.waitForActive(1)
        async let stopped: Void = herald.stop()
        #expect(await eventually { !herald.gateway.accepting })  // draining: no new connection
        probe.release()
        await stopped
        let response = try await inFlight
        #expect(response.status == 200)
        await #expect(throws: (any Error).self) { try await herald.request(.GET, "/health", timeout: .seconds(1)) }
    }
}

/// Fair shares between sources (docs/operations.md, "Sources"): through the whole gateway, with
/// the probe pushkin holding its dispatches, sources named by a trusted proxy's `X-Forwarded-For`.
@Suite struct SourceShareTests {
    static let apps = "  com.example.probe:\n    type: probe\n    inflight_request_limit: 2\n"

    func notify(_ herald: RunningGateway, _ pushkey: String, from source: String?) async throws -> TestResponse {
        try await herald.request(
            .POST, "/_matrix/push/v1/notify",
            body: JSONWriter.serialize(notifyBody(devices: [["app_id": "com.example.probe", "pushkey": .string(pushkey)]])),
            headers: source.map { [("X-Forwarded-For", "\($0), 10.1.2.3")] } ?? [])
    }

    /// A flooding source fills the app; a quiet one is admitted all the same, and the flood, over
    /// its share, is told to back off (429, `Retry-After`, `M_LIMIT_EXCEEDED`), counted by reason.
    @Test func aQuietSourceIsAdmittedWhileAFloodIsToldToBackOff() async throws {
        let probe = Probe()
        let herald = try await RunningGateway.start(
            gatewayYAML(apps: Self.apps, http: "trusted_proxies: ['127.0.0.1/32', '10.0.0.0/8']"), registry: .withProbe(probe))
        let (flood, quiet) = ("203.0.113.7", "198.51.100.9")
        async let held1 = notify(herald, "hold-1", from: flood)
        async let held2 = notify(herald, "hold-2", from: flood)
        await probe.waitForActive(2)
        let full = try await notify(herald, "accept-f1", from: flood)  // alone and full: the app's limit
        async let quietHeld = notify(herald, "hold-q", from: quiet)  // under its share: admitted past the limit
        await probe.waitForActive(3)
        let quietAccepted = try await notify(herald, "accept-q", from: "198.51.100.9:51234")  // its share is 1: held
        let overShare = try await notify(herald, "accept-f2", from: flood)
        probe.release()
        let answers = try await [held1, held2, quietHeld]
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(answers.allSatisfy { $0.status == 200 })
        #expect(full.status == 429 && full.headers.first(name: "Retry-After") == "1")
        #expect(quietAccepted.status == 429)
        #expect(overShare.status == 429 && overShare.json?["errcode"] == "M_LIMIT_EXCEEDED")
        #expect(overShare.json?["error"]?.stringValue?.contains("share") == true)
        #expect(probe.seen.sorted() == ["hold-1", "hold-2", "hold-q"])
        #expect(metrics.contains(#"herald_source_limited_total{reason="share"} 2"#))
    }

    /// From a peer that is not a trusted proxy, `X-Forwarded-For` names nothing: every request is
    /// the peer's, whatever it claims.
    @Test func anUntrustedPeersForwardedForIsIgnored() async throws {
        let probe = Probe()
        let herald = try await RunningGateway.start(gatewayYAML(apps: Self.apps), registry: .withProbe(probe))
        async let held1 = notify(herald, "hold-1", from: "203.0.113.7")
        async let held2 = notify(herald, "hold-2", from: "203.0.113.7")
        await probe.waitForActive(2)
        let claimed = try await notify(herald, "accept", from: "198.51.100.9")
        probe.release()
        _ = try await [held1, held2]
        await herald.stop()
        #expect(claimed.status == 429)  // the peer's, and the peer holds the whole app
        #expect(probe.seen.contains("accept") == false)
    }

    /// The source of a request: the peer, or the rightmost untrusted address a trusted proxy
    /// passes on; an IPv6 source is its /64.
    @Test func aSourceIsThePeerOrTheClientATrustedProxyNames() throws {
        let trusted = ["10.0.0.0/8", "127.0.0.1"].compactMap(IPNetwork.init)
        let proxy = try SocketAddress(ipAddress: "10.0.0.5", port: 1)
        let stranger = try SocketAddress(ipAddress: "192.0.2.1", port: 1)
        func source(_ peer: SocketAddress, _ header: String?) -> String? {
            RequestSource.of(peer: peer, forwardedFor: header, trusted: trusted)?.description
        }
        #expect(source(proxy, "198.51.100.9, 10.0.0.7") == "198.51.100.9")
        #expect(source(proxy, "6.6.6.6, 198.51.100.9") == "198.51.100.9")  // the client's own claim is left of it
        #expect(source(proxy, "[2001:db8:1:2::9]:443") == "2001:db8:1:2::/64")
        #expect(source(proxy, "203.0.113.7:5000") == "203.0.113.7")
        #expect(source(proxy, "not an address") == "10.0.0.5")
        #expect(source(proxy, nil) == "10.0.0.5")
        #expect(source(stranger, "198.51.100.9") == "192.0.2.1")
        let v6 = try SocketAddress(ipAddress: "2001:db8:aa:bb:1:2:3:4", port: 1)
        #expect(RequestSource(peer: v6) == RequestSource(peer: try SocketAddress(ipAddress: "2001:db8:aa:bb::99", port: 2)))
        #expect(RequestSource(peer: try SocketAddress(ipAddress: "::ffff:192.0.2.1", port: 1))?.description == "192.0.2.1")
    }
}

/// `notify.sources`: a rate per source, with overrides for listed networks, on the gateway's
/// manual clock; and the once-a-minute log of the sources told to back off.
@Suite struct SourceRateTests {
    @Test func aSourcePastItsRateIsToldWhenToComeBack() async throws {
        let clock = ManualClock()
        let extra = """
            notify:
              answer_within: 300
              sources:
                rate: 1
                burst: 2
                networks:
                  198.51.100.0/24: {rate: 10, burst: 5}
            """
        let herald = try await RunningGateway.start(
            gatewayYAML(
                apps: "  com.example.probe:\n    type: probe\n", extra: extra, http: "trusted_proxies: ['127.0.0.1', '10.0.0.0/8']"),
            registry: .withProbe(Probe()), clock: clock)
        let share = SourceShareTests()
        var small: [Int] = []
        for _ in 0..<3 { small.append(try await share.notify(herald, "accept", from: "203.0.113.7").status) }
        let refused = try await share.notify(herald, "accept", from: "203.0.113.7")
        var large: [Int] = []
        for _ in 0..<6 { large.append(try await share.notify(herald, "accept", from: "198.51.100.9").status) }
        clock.advance(by: .seconds(1))
        let later = try await share.notify(herald, "accept", from: "203.0.113.7")
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(small == [200, 200, 429])
        #expect(refused.headers.first(name: "Retry-After") == "1")
        #expect(refused.json == ["errcode": "M_LIMIT_EXCEEDED", "error": refused.json?["error"] ?? "", "retry_after_ms": 1000])
        #expect(large == [200, 200, 200, 200, 200, 429])
        #expect(later.status == 200)
        #expect(metrics.contains(#"herald_source_limited_total{reason="rate"} 3"#))
    }

    @Test func theSourcesToldToBackOffAreLoggedOnceAMinute() throws {
        let log = SourceLimitLog()
        let start = ManualClock().now
        let (a, b) = (RequestSource(ipv4: 0xCB00_7107), RequestSource(ipv4: 0xC633_6409))
        #expect(log.refused(a, .share, now: start) == nil)
        #expect(log.refused(a, .rate, now: start + .seconds(10)) == nil)
        #expect(log.refused(b, .device, now: start + .seconds(59)) == nil)
        let line = try #require(log.refused(a, .share, now: start + .seconds(60)))
        #expect(line.1["sources"] == "2")
        #expect(line.1["top"] == "203.0.113.7 (share 2, rate 1, device 0); 198.51.100.9 (share 0, rate 0, device 1)")
        #expect(log.refused(a, .share, now: start + .seconds(61)) == nil)  // a new minute
        #expect(log.refused(nil, .share, now: start + .seconds(200)) == nil)
    }
}

/// `per_device_per_minute` (docs/operations.md, "Sources"), on the gateway's manual clock: a push
/// past a device's budget is not sent and is told when to come back; badge updates past it wait,
/// and only the latest of a device is sent.
@Suite struct DeviceBudgetTests {
    static let apps = "  com.example.probe:\n    type: probe\n    per_device_per_minute: 3\n"

    func notify(_ herald: RunningGateway, event: String?, unread: Int, pushkeys: [String] = ["accept"]) async throws -> TestResponse {
        var notification: JSONObject = ["counts": ["unread": .int(Int64(unread))]]
        if let event { notification["event_id"] = .string(event) }
        return try await herald.notify(
            notifyBody(notification, devices: pushkeys.map { ["app_id": "com.example.probe", "pushkey": .string($0)] }))
    }

    @Test func aPushPastTheDevicesBudgetIsNotSentAndIsToldWhenToComeBack() async throws {
        let clock = ManualClock()
        let probe = Probe()
        let herald = try await RunningGateway.start(gatewayYAML(apps: Self.apps), registry: .withProbe(probe), clock: clock)
        var statuses: [Int] = []
        for n in 0..<3 { statuses.append(try await notify(herald, event: "$e\(n)", unread: n).status) }
        let past = try await notify(herald, event: "$e3", unread: 3)
        let mixed = try await notify(herald, event: "$e4", unread: 4, pushkeys: ["accept", "accept-other"])
        clock.advance(by: .seconds(20))  // a third of a minute: one push of three
        let later = try await notify(herald, event: "$e5", unread: 5)
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(statuses == [200, 200, 200])
        #expect(past.status == 429 && past.headers.first(name: "Retry-After") == "20")
        #expect(past.json?["errcode"] == "M_LIMIT_EXCEEDED" && past.json?["retry_after_ms"] == 20000)
        #expect(mixed.status == 429)  // the one failure is the budget's; the other device was sent
        #expect(later.status == 200)
        #expect(probe.seen == ["accept", "accept", "accept", "accept-other", "accept"])
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="com.example.probe",outcome="failed",reason="device_budget"} 2"#))
    }

    @Test func badgeUpdatesPastTheBudgetAreCoalescedToTheLatest() async throws {
        let clock = ManualClock()
        let probe = Probe()
        let herald = try await RunningGateway.start(gatewayYAML(apps: Self.apps), registry: .withProbe(probe), clock: clock)
        for n in 0..<3 { _ = try await notify(herald, event: "$e\(n)", unread: n) }
        let base = clock.sleepers
        async let first = notify(herald, event: nil, unread: 10)
        #expect(await eventually { clock.sleepers >= base + 1 })  // waiting for the budget
        async let second = notify(herald, event: nil, unread: 11)
        #expect(await eventually { clock.sleepers >= base + 2 })
        clock.advance(by: .seconds(20))
        let (replaced, latest) = try await (first, second)
        let metrics = try await herald.metricsText()
        await herald.stop()
        #expect(replaced.status == 200 && latest.status == 200)
        #expect(probe.unread == [0, 1, 2, 11])  // the latest badge, once
        #expect(metrics.contains(#"herald_device_outcomes_total{pushkin="com.example.probe",outcome="dropped",reason="coalesced"} 1"#))
    }
}
