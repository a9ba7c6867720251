import Crypto
import Foundation
import HeraldTestSupport
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

/// Herald's own transports against real servers on loopback: the keep-alive HTTP/1.1 pool
/// (`HTTP1Upstream`: what it sends, how it reuses and bounds connections, how it ends a request
/// that gets no answer, TLS) and how `HTTP2Upstream` fails a connection that cannot serve it.
///
/// Every transport here has 60 s timeouts unless a timeout is what the test is about: a loopback
/// answer can wait seconds for a core while the whole suite starts on two (a request at the default
/// 10 s once failed so in CI).
@Suite struct UpstreamTransportTests {
    static func directory() throws -> String {
        ScratchDirectory.make("herald-upstream")
    }

    func post(_ transport: any UpstreamTransport, _ base: String, _ path: String, _ body: String) async throws -> UpstreamResponse {
        try await transport.send(UpstreamRequest(url: base + path, headers: HTTPHeaders(), body: ByteBuffer(string: body)))
    }

    @Test func connectionsAreReusedAndNeverMoreThanMaxConnections() async throws {
        let server = try await EchoHTTP1Server.start()
        var options = EchoHTTP1Server.Options()
        options.delay = .milliseconds(20)
        options.holdAnswersUntilInFlight = 3
        server.set(options)
        // Thirty requests share three connections, each waiting its turn within its request timeout:
        // a generous one, so that a loaded machine's pace does not matter here.
        let transport = try HTTP1Upstream(
            origin: server.baseURL, settings: UpstreamSettings(maxConnections: 3, requestTimeout: .seconds(60)), clock: nil)
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<30 { group.addTask { try await String(buffer: self.post(transport, server.baseURL, "/m/\(i)", "b\(i)").body) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(answers == Set((0..<30).map { "/m/\($0) b\($0)" }))
        #expect(server.maxInFlight == 3)
        #expect(server.connections == 3)
        for _ in 0..<5 { _ = try await post(transport, server.baseURL, "/again", "") }
        #expect(server.connections == 3)  // kept alive and reused
        await transport.shutdown()
        await server.stop()
    }

    /// `OriginPools`: one pool per origin, reused for every URL on it (found without parsing the
    /// URL again), the least recently used one shut down past `maxOrigins`; a URL with a space is
    /// refused without a request even when its origin has a pool.
    @Test func originPoolsReuseEachOriginsPoolAndEvictTheLeastRecentlyUsed() async throws {
        let (a, b, c) = (try await EchoHTTP1Server.start(), try await EchoHTTP1Server.start(), try await EchoHTTP1Server.start())
        let pools = OriginPools(
            settings: UpstreamSettings(maxConnections: 1, connectTimeout: .seconds(60), requestTimeout: .seconds(60)), addressGuard: nil,
            maxOrigins: 2, clock: nil)
        func post(_ server: EchoHTTP1Server, _ path: String) async throws -> String {
            try await String(buffer: self.post(pools, server.baseURL, path, "x").body)
        }
        #expect(try await post(a, "/1") == "/1 x")
        #expect(try await post(b, "/2?q=1") == "/2?q=1 x")
        #expect(try await post(a, "/3") == "/3 x")  // A is now the most recently used
        #expect(try await post(c, "/4") == "/4 x")  // B's pool makes room
        #expect(try await post(a, "/5") == "/5 x")
        #expect(try await post(b, "/6") == "/6 x")
        await #expect(throws: UpstreamOriginError.self) { try await post(a, "/a space") }
        await pools.shutdown()
        #expect(a.connections == 1)  // one connection, kept across its four requests
        #expect(a.requests == 3)  // the refused URL never reached it
        #expect(b.connections == 2)  // its pool was shut down, and made again
        for server in [a, b, c] { await server.stop() }
    }

    /// `connect_timeout` bounds the whole connection, its TLS handshake included, on the clock the
    /// transport was given: a server that accepts and never answers the handshake fails the
    /// request with `connectTimeout` when the manual clock reaches the bound, and not before.
    @Test func aHandshakeThatNeverEndsFailsAtTheConnectTimeoutOnTheGivenClock() async throws {
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        let origin = "https://127.0.0.1:\(try #require(silent.localAddress?.port))"
        let clock = ManualClock()
        let transport = try HTTP2Upstream(
            origin: UpstreamOrigin(origin), settings: UpstreamSettings(connectTimeout: .seconds(30), requestTimeout: .seconds(300)),
            tls: .makeClientConfiguration(), offering: ["h2"], loopClock: clock.loopClock)
        async let sent = post(transport, origin, "/x", "")
        #expect(await eventually { clock.loopTimers(dueIn: .seconds(30)) == 1 })
        clock.advance(by: .seconds(29))
        let pending = clock.loopTimers(dueIn: .seconds(1))
        clock.advance(by: .seconds(1))
        var failure: (any Error)?
        do { _ = try await sent } catch { failure = error }
        await transport.shutdown()
        try await silent.close()
        #expect(pending == 1)  // the bound had not fired a second before it
        #expect(failure as? UpstreamConnectionError == .connectTimeout, "\(String(describing: failure))")
    }

    @Test func aConnectionTheServerClosesIsNotReused() async throws {
        let server = try await EchoHTTP1Server.start()
        var options = EchoHTTP1Server.Options()
        options.closeAfterEachAnswer = true
        server.set(options)
        let transport = try HTTP1Upstream(
            origin: server.baseURL,
            settings: UpstreamSettings(maxConnections: 1, connectTimeout: .seconds(60), requestTimeout: .seconds(60)), clock: nil)
        for i in 0..<4 {
            let response = try await post(transport, server.baseURL, "/c", "\(i)")
            #expect(response.status == 200)
            #expect(String(buffer: response.body) == "/c \(i)")
        }
        #expect(server.connections == 4)
        await transport.shutdown()
        await server.stop()
    }

    @Test func aRequestWithoutAnAnswerEndsAtTheRequestTimeoutAndItsConnectionIsDropped() async throws {
        let server = try await EchoHTTP1Server.start()
        var slow = EchoHTTP1Server.Options()
        slow.delay = .seconds(300)
        server.set(slow)
        // 15 s: the next request shares the timeout, and beside two busy loops it once took over 4 s.
        let transport = try HTTP1Upstream(
            origin: server.baseURL, settings: UpstreamSettings(maxConnections: 1, requestTimeout: .seconds(15)), clock: nil)
        // Without the timeout the server's answer after 300 s would come back, and nothing would throw.
        await #expect(throws: Deadline.Exceeded.self) { _ = try await post(transport, server.baseURL, "/slow", "") }
        server.set(EchoHTTP1Server.Options())
        let response = try await post(transport, server.baseURL, "/next", "")
        #expect(String(buffer: response.body) == "/next ")  // not the slow request's late answer
        #expect(server.connections == 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test func theAnswerIsReadOnlyUpToMaxResponseBytesAndTheHostAndLengthAreSent() async throws {
        let server = try await EchoHTTP1Server.start()
        let transport = try HTTP1Upstream(
            origin: server.baseURL,
            settings: UpstreamSettings(connectTimeout: .seconds(60), requestTimeout: .seconds(60), maxResponseBytes: 8), clock: nil)
        let response = try await post(transport, server.baseURL, "/long/path", "and a body")
        #expect(response.status == 200)
        #expect(String(buffer: response.body) == "/long/pa")
        await transport.shutdown()
        await server.stop()
    }

    @Test func throughTheProxyTheRequestGoesThroughACONNECTTunnel() async throws {
        let server = try await EchoHTTP1Server.start()
        let proxy = try await FakeConnectProxy.start(username: "u", password: "p")
        let transport = try HTTP1Upstream(
            origin: server.baseURL,
            settings: UpstreamSettings(
                connectTimeout: .seconds(60), requestTimeout: .seconds(60),
                proxy: ProxySettings(host: "127.0.0.1", port: proxy.port, username: "u", password: "p")), clock: nil)
        let response = try await post(transport, server.baseURL, "/via", "proxy")
        #expect(String(buffer: response.body) == "/via proxy")
        #expect(proxy.connects == [.init(target: "127.0.0.1:\(server.port)", authorized: true)])
        await transport.shutdown()
        await proxy.stop()
        await server.stop()
    }

    /// docs/architecture.md, "One thread per request": a connection is opened on the event loop of
    /// the request that needs it, and an idle one on the request's own loop is taken first.
    @Test func connectionsOpenOnTheRequestsEventLoopAndAreReusedThereFirst() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let server = try await EchoHTTP1Server.start()
        var options = EchoHTTP1Server.Options()
        options.holdAnswersUntilInFlight = 2
        server.set(options)
        let transport = try HTTP1Upstream(
            origin: server.baseURL,
            settings: UpstreamSettings(maxConnections: 2, connectTimeout: .seconds(60), requestTimeout: .seconds(60)), clock: nil)
        func post(on loop: any EventLoop, _ path: String) async throws -> String {
            try await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
                try await String(buffer: self.post(transport, server.baseURL, path, "").body)
            }
        }
        // Two requests at once, one from each loop: a connection each, on its requester's loop.
        async let first = post(on: loops[0], "/0")
        async let second = post(on: loops[1], "/1")
        #expect(try await [first, second] == ["/0 ", "/1 "])
        let idle = transport.idleConnectionLoops
        #expect(Set(idle.map { ObjectIdentifier($0 as AnyObject) }) == Set(loops.map { ObjectIdentifier($0 as AnyObject) }))
        // A request from the loop whose connection is not the last idle one takes its own, not the last.
        guard let own = idle.first, let other = idle.last else { return }
        options.delay = .seconds(2)
        server.set(options)
        async let third = post(on: own, "/2")
        await eventually { transport.idleConnectionLoops.count <= 1 }
        #expect(transport.idleConnectionLoops.map { ObjectIdentifier($0 as AnyObject) } == [ObjectIdentifier(other as AnyObject)])
        #expect(try await third == "/2 ")
        #expect(server.connections == 2)
        await transport.shutdown()
        await server.stop()
        try await group.shutdownGracefully()
    }

    @Test func anHTTP2UpstreamOpensItsConnectionOnTheEventLoopItIsGiven() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let pki = try TestPKI(directory: Self.directory())
        let apns = try await FakeAPNs.start(
            pki: pki, topic: "org.example.app", auth: .token(keyId: "K", teamId: "T", publicKey: P256.Signing.PrivateKey().publicKey))
        let transport = try HTTP2Upstream(
            origin: apns.baseURL,
            settings: UpstreamSettings(connectTimeout: .seconds(60), requestTimeout: .seconds(60), trustedCAFiles: [pki.caFile]),
            tls: .makeClientConfiguration(), eventLoop: loops[1])
        // Sent from the other loop: the connection still lives on the one given (no JWT, so APNs answers 403).
        let response = try await withTaskExecutorPreference(EventLoopTaskExecutor(loops[0])) {
            try await post(transport, apns.baseURL, "/3/device/\(String(repeating: "ab", count: 32))", "{}")
        }
        #expect(response.status == 403)
        #expect(try await loops[1].submit { transport.isOnCurrentEventLoop }.get())
        #expect(try await !loops[0].submit { transport.isOnCurrentEventLoop }.get())
        await transport.shutdown()
        await apns.stop()
        try await group.shutdownGracefully()
    }

    /// A connection has 2^30 client stream ids: one that has used its last retires, its request
    /// fails as a network error (which the retry policy sends again), and the next request opens a
    /// new connection.
    @Test func anHTTP2ConnectionThatHasUsedItsLastStreamIdIsReplaced() async throws {
        let pki = try TestPKI(directory: Self.directory())
        let apns = try await FakeAPNs.start(
            pki: pki, topic: "org.example.app", auth: .token(keyId: "K", teamId: "T", publicKey: P256.Signing.PrivateKey().publicKey))
        // Timeouts far beyond a TLS handshake of a debug build on a loaded machine: the test is about
        // stream ids, and a timed-out connection would be one more.
        let transport = try HTTP2Upstream(
            origin: apns.baseURL,
            settings: UpstreamSettings(connectTimeout: .seconds(60), requestTimeout: .seconds(60), trustedCAFiles: [pki.caFile]),
            tls: .makeClientConfiguration(), firstStreamID: HTTP2StreamID(Int32.max - 2))
        let path = "/3/device/\(String(repeating: "ab", count: 32))"
        // No JWT: APNs answers 403, which is an answer all the same.
        #expect(try await post(transport, apns.baseURL, path, "{}").status == 403)
        #expect(try await post(transport, apns.baseURL, path, "{}").status == 403)
        await #expect(throws: UpstreamConnectionError.closedUnanswered) {
            try await post(transport, apns.baseURL, path, "{}")
        }
        #expect(try await post(transport, apns.baseURL, path, "{}").status == 403)
        #expect(apns.connectionsAccepted == 2)
        #expect(apns.received.count == 3)
        await transport.shutdown()
        await apns.stop()
    }

    /// The fake APNs verifies each distinct provider token once (as Apple does, since a token is
    /// reused for up to an hour); a forged or expired token is still refused after a good one.
    @Test func theFakeAPNsStillRefusesForgedAndExpiredTokensAfterAcceptingAGoodOne() async throws {
        let pki = try TestPKI(directory: Self.directory())
        let key = P256.Signing.PrivateKey()
        let apns = try await FakeAPNs.start(
            pki: pki, topic: "org.example.app", auth: .token(keyId: "K", teamId: "T", publicKey: key.publicKey))
        let transport = try HTTP2Upstream(
            origin: apns.baseURL,
            settings: UpstreamSettings(connectTimeout: .seconds(60), requestTimeout: .seconds(60), trustedCAFiles: [pki.caFile]),
            tls: .makeClientConfiguration())
        func send(_ token: String) async throws -> String {
            var headers = HTTPHeaders()
            headers.add(name: "authorization", value: "bearer \(token)")
            headers.add(name: "apns-topic", value: "org.example.app")
            let response = try await transport.send(
                UpstreamRequest(
                    url: apns.baseURL + "/3/device/" + String(repeating: "ab", count: 32), headers: headers,
                    body: ByteBuffer(string: #"{"aps":{}}"#)))
            return "\(response.status) \(response.bodyText)"
        }
        let good = try APNsProviderToken.sign(key: key, keyId: "K", teamId: "T", issuedAt: Date())
        let forged = try APNsProviderToken.sign(key: P256.Signing.PrivateKey(), keyId: "K", teamId: "T", issuedAt: Date())
        let expired = try APNsProviderToken.sign(key: key, keyId: "K", teamId: "T", issuedAt: Date() - 7200)
        let otherTeam = try APNsProviderToken.sign(key: key, keyId: "K", teamId: "U", issuedAt: Date())
        #expect(try await send(good) == "200 ")
        #expect(try await send(forged) == #"403 {"reason":"InvalidProviderToken"}"#)
        #expect(try await send(good) == "200 ")
        #expect(try await send(expired) == #"403 {"reason":"ExpiredProviderToken"}"#)
        #expect(try await send(otherTeam) == #"403 {"reason":"InvalidProviderToken"}"#)
        #expect(apns.received.map(\.status) == [200, 403, 200, 403, 403])
        await transport.shutdown()
        await apns.stop()
    }

    @Test func overHTTPSTheServerIsVerifiedWithTheExtraCA() async throws {
        let pki = try TestPKI(directory: Self.directory())
        let server = try await EchoHTTP1Server.start(tls: pki)
        // Patient timeouts: loading the CA and the handshake may wait for a loaded machine's cores.
        let patient = UpstreamSettings(connectTimeout: .seconds(60), requestTimeout: .seconds(60), trustedCAFiles: [pki.caFile])
        let trusting = try HTTP1Upstream(origin: server.baseURL, settings: patient, clock: nil)
        let response = try await post(trusting, server.baseURL, "/tls", "ok")
        #expect(String(buffer: response.body) == "/tls ok")
        // Without the test CA the certificate is refused (the handshake fails, or the server sees the
        // connection close first): a network error, and nothing reaches the server.
        let strict = try HTTP1Upstream(origin: server.baseURL, settings: UpstreamSettings(), clock: nil)
        await #expect(throws: (any Error).self) { _ = try await post(strict, server.baseURL, "/tls", "no") }
        #expect(server.requests == 1)
        await trusting.shutdown()
        await strict.shutdown()
        await server.stop()
    }

    @Test func anHTTP2UpstreamRefusesAServerThatDoesNotSpeakHTTP2() async throws {
        let pki = try TestPKI(directory: Self.directory())
        let server = try await EchoHTTP1Server.start(tls: pki)
        let transport = try HTTP2Upstream(
            origin: server.baseURL,
            settings: UpstreamSettings(connectTimeout: .seconds(60), requestTimeout: .seconds(60), trustedCAFiles: [pki.caFile]),
            tls: .makeClientConfiguration())
        await #expect(throws: UpstreamConnectionError.notHTTP2) { _ = try await post(transport, server.baseURL, "/h2", "") }
        #expect(server.requests == 0)
        await transport.shutdown()
        await server.stop()
    }

    @Test func aServerThatNeverCompletesTheHandshakeEndsAtTheConnectTimeout() async throws {
        // The fake proxy waits for a CONNECT head that a TLS ClientHello never completes: it accepts and stays silent.
        let silent = try await FakeConnectProxy.start()
        let base = "https://127.0.0.1:\(silent.port)"
        let transport = try HTTP2Upstream(
            origin: base, settings: UpstreamSettings(connectTimeout: .milliseconds(300)), tls: .makeClientConfiguration())
        // The connect timeout's own error: the silent server would otherwise hold the request for ever.
        await #expect(throws: UpstreamConnectionError.connectTimeout) { _ = try await post(transport, base, "/3/device/ab", "") }
        await transport.shutdown()
        await silent.stop()
    }

    @Test func aBaseURLsOwnPathStaysInTheRequestPath() throws {
        let origin = try UpstreamOrigin("https://fcm.example.org:8443/prefix")
        #expect(origin.authority == "fcm.example.org:8443")
        #expect(try origin.path(of: "https://fcm.example.org:8443/prefix/v1/send") == "/prefix/v1/send")
        #expect(throws: UpstreamOriginError.self) { try origin.path(of: "https://other.example.org/v1") }
        #expect(try UpstreamOrigin("https://[::1]").authority == "[::1]")
        #expect(try UpstreamOrigin("http://h:80").hostPort == "h:80")
        #expect(throws: UpstreamOriginError.self) { try UpstreamOrigin("ftp://h") }
    }

    /// An origin is the URL up to its authority's end, found after the first `://`: what a Web
    /// Push request's pool is looked up by, and what a pushback holds.
    @Test func anOriginIsCutAfterTheFirstSchemeSeparator() {
        #expect(UpstreamOrigin.prefix(of: "https://push.example/wpush/v2/abc") == "https://push.example")
        #expect(UpstreamOrigin.prefix(of: "http://h:8080?q=1") == "http://h:8080")
        #expect(UpstreamOrigin.prefix(of: "https://[::1]:8443/x") == "https://[::1]:8443")
        #expect(UpstreamOrigin.prefix(of: "a:b://c/d") == "a:b://c")
        #expect(UpstreamOrigin.prefix(of: "no-scheme/path") == "no-scheme")
        #expect(UpstreamOrigin.prefix(of: "https:") == "https:")
        #expect(UpstreamOrigin.prefix(of: "https://") == "https://")
        #expect(PushbackScope.origin(ofURL: "HTTPS://Push.Example:443/x#f") == "https://push.example:443")
        #expect(PushbackScope.origin(ofURL: "https://h?x=1") == "https://h")
        #expect(PushbackScope.origin(ofURL: "not a url") == "not a url")
    }

    /// A request that names its own target (APNs's `/3/device/…`) is sent to it as it is, checked
    /// as a URL's path is; without one, the URL's path on the origin is the target.
    @Test func aRequestsOwnPathIsItsTargetCheckedAsAURLsPathIs() throws {
        let origin = try UpstreamOrigin("https://api.example.org/prefix")
        func target(_ url: String, _ path: String?) throws -> String {
            try origin.target(of: UpstreamRequest(url: url, path: path, headers: HTTPHeaders(), body: nil))
        }
        #expect(try target("https://api.example.org/prefix", "/prefix/3/device/ab") == "/prefix/3/device/ab")
        #expect(try target("https://api.example.org/prefix/v1/send", nil) == "/prefix/v1/send")
        #expect(throws: UpstreamOriginError.self) { try target("https://api.example.org", "/3/device/a b") }
        #expect(throws: UpstreamOriginError.self) { try target("https://api.example.org", "/3/device/a\r\nx: y") }
        #expect(throws: UpstreamOriginError.self) { try target("https://api.example.org", "3/device/ab") }
    }
}
