import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import Testing

@testable import Gateway
@testable import HeraldCore
@testable import HeraldHTTPServer
@testable import HeraldUpstream
@testable import Pushkins

/// Herald's own HTTP/2 connection to APNs (`HTTP2Upstream`): the server's stream limit, the
/// outbound proxy's CONNECT tunnel, and what reaches APNs on the wire.
@Suite struct APNsTransportTests {
    let e2e = APNsEndToEndTests()

    @Test func theServersStreamLimitHoldsWhenItIsBelowTheConfiguredOne() async throws {
        // max_concurrent_streams defaults far above the 3 the server allows: the extra streams wait.
        // Patient timeouts, the subject being the stream limit: with every test of the suite at
        // once on two cores, requests waited past the default 10 s and were sent again (the fake
        // saw 40, 13 at once).
        let setup = try await e2e.start(
            extra: "max_connections: 1\nrequest_timeout: 120", top: "notify:\n  answer_within: 300", maxConcurrentStreams: 3,
            limit: 5000)
        setup.apns.scriptDefault(.delay(.milliseconds(20), then: .accept))
        let keys = (0..<30).map { _ in APNsEndToEndTests.pushkey() }
        let response = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: keys.map { e2e.device($0) }))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.apns.received.count == 30)
        #expect(setup.apns.received.allSatisfy { $0.status == 200 })
        #expect(setup.apns.maxConcurrentRequests == 3)
        #expect(setup.apns.connectionsAccepted == 1)
    }

    /// HTTP/2's flow control gives the server 64 KiB to send on the connection and on each stream
    /// until the client gives it back: answers far larger than both are read whole, on one
    /// connection, each request once (a stalled answer would time out and be sent again).
    @Test func answersLargerThanTheFlowControlWindowsAreReadWhole() async throws {
        // A stalled answer would wait out the request timeout (300 s): the notify would go
        // unanswered past the client's 60 s and fail.
        let setup = try await e2e.start(extra: "max_connections: 1\nrequest_timeout: 300", limit: 5000)
        setup.apns.scriptDefault(.fail(400, String(repeating: "x", count: 100_000)))
        let keys = (0..<20).map { _ in APNsEndToEndTests.pushkey() }
        let response = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: keys.map { e2e.device($0) }))
        await setup.stop()
        #expect(response.status == 502)  // every device failed: APNs documents no such 400
        #expect(setup.apns.received.count == 20)
        #expect(setup.apns.received.allSatisfy { $0.status == 400 })
        #expect(setup.apns.connectionsAccepted == 1)
    }

    /// docs/operations.md, "Memory": the pooled connections of an APNs app, and the pushkin the
    /// relay makes for its other host, share one TLS context (each holds the parsed trust store).
    @Test func pooledConnectionsAndSiblingPushkinsShareOneTLSContext() async throws {
        let setup = try await e2e.start(extra: "max_connections: 3")
        setup.apns.scriptDefault(.delay(.milliseconds(50), then: .accept))
        let keys = (0..<6).map { _ in APNsEndToEndTests.pushkey() }
        let response = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: keys.map { e2e.device($0) }))
        let pushkin = try #require(setup.herald.gateway.pushkins.first as? APNsPushkin)
        let sibling = try pushkin.sibling(baseURL: setup.apns.baseURL, name: "com.example.apns.development")
        await sibling.shutdown()
        await setup.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.apns.received.map(\.status) == Array(repeating: 200, count: 6))
        #expect(setup.apns.connectionsAccepted == 3)
        #expect(pushkin.environment.tlsContexts.count == 1)
    }

    /// docs/architecture.md, "Dispatch": the front ends that need an app's other host (the relay,
    /// ADAMANT) share one sender per app and host; the app's own host is the app itself.
    @Test func senderForAnotherHostIsMadeOncePerAppAndHost() async throws {
        let setup = try await e2e.start()
        let pushkin = try #require(setup.herald.gateway.pushkins.first as? APNsPushkin)
        let senders = HostSenders()
        let first = try senders.sender(of: pushkin, baseURL: APNsHosts.development)
        let second = try senders.sender(of: pushkin, baseURL: APNsHosts.development)
        let other = try senders.sender(of: pushkin, baseURL: "https://127.0.0.1:1")
        let own = try senders.sender(of: pushkin, baseURL: pushkin.baseURL)
        for sender in senders.all { await sender.shutdown() }
        await setup.stop()
        func identity(_ sender: any APNsSending) -> ObjectIdentifier? { (sender as? APNsPushkin).map(ObjectIdentifier.init) }
        #expect(identity(first) != nil)
        #expect(identity(first) == identity(second))
        #expect(identity(first) != identity(other))
        #expect(identity(own) == ObjectIdentifier(pushkin))
        #expect(first.name == "\(pushkin.name) (development)")
        #expect(senders.all.count == 2)
    }

    @Test func throughTheProxyTheTunnelCarriesTheNotificationWithCredentials() async throws {
        let proxy = try await FakeConnectProxy.start(username: "herald", password: "s3cret")
        let setup = try await e2e.start(top: "proxy: 'http://herald:s3cret@127.0.0.1:\(proxy.port)'")
        let key = APNsEndToEndTests.pushkey()
        let first = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [e2e.device(key)]))
        let tunnels = proxy.connects
        var next = APNsEndToEndTests.message
        next["event_id"] = "$the-next-event"  // the same event would be a repeat, not sent again
        let second = try await setup.herald.notify(notifyBody(next, devices: [e2e.device(key)]))
        await setup.stop()
        await proxy.stop()
        #expect(first.json == ["rejected": []])
        #expect(second.json == ["rejected": []])
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).map(\.status) == [200, 200])
        // A tunnel to APNs with the credentials (on a loaded machine the first attempt may time out
        // and be retried through a second one), kept for the second notification.
        #expect(tunnels.last == .init(target: "localhost:\(setup.apns.port)", authorized: true))
        #expect(tunnels.count <= 2)
        #expect(proxy.connects == tunnels)
    }

    @Test func aProxyThatRefusesTheTunnelIsA502AndNothingReachesAPNs() async throws {
        let proxy = try await FakeConnectProxy.start(username: "herald", password: "right")
        let setup = try await e2e.start(extra: "max_attempts: 2", top: "proxy: 'http://herald:wrong@127.0.0.1:\(proxy.port)'")
        let response = try await setup.herald.notify(
            notifyBody(APNsEndToEndTests.message, devices: [e2e.device(APNsEndToEndTests.pushkey())]))
        await setup.stop()
        await proxy.stop()
        #expect(response.status == 502)
        #expect(setup.apns.received.isEmpty)
        #expect(proxy.connects.count == 2)  // each attempt asked again
        #expect(proxy.connects.allSatisfy { !$0.authorized })
    }

    @Test func aHostInNoProxyIsReachedDirectly() async throws {
        let proxy = try await FakeConnectProxy.start()
        let setup = try await e2e.start(top: "proxy: 'http://127.0.0.1:\(proxy.port)'\nno_proxy: ['localhost']")
        let key = APNsEndToEndTests.pushkey()
        let response = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [e2e.device(key)]))
        await setup.stop()
        await proxy.stop()
        #expect(response.json == ["rejected": []])
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)
        #expect(proxy.connects.isEmpty)
    }
}
