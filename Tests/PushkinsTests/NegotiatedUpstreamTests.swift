import Foundation
import HeraldHTTPServer
import HeraldTestSupport
import NIOCore
import NIOHTTP1
import NIOHTTP2
import Synchronization
import Testing

@testable import HeraldCore
@testable import HeraldUpstream

/// `NegotiatedUpstream` against a TLS front that offers HTTP/2 and HTTP/1.1 by ALPN, or HTTP/1.1
/// only: which protocol it speaks, how it multiplexes on one connection, and how it takes a
/// server's `MAX_CONCURRENT_STREAMS`, a stream reset, a deadline, the proxy and the address check.
/// docs/architecture.md, "The upstream-call path".
@Suite struct NegotiatedUpstreamTests {
    /// Answers `<path> <body>` once `holdUntil` requests are in progress at once (every request
    /// after that at once), and never answers a request to `/hang` until `release` is raised.
    final class Echo: HTTPHandler {
        let holdUntil: Int
        let held = TestEvent()
        let release = TestEvent()
        private let arrived = Mutex(0)
        private let seen = Mutex<[HTTPHeaders]>([])

        init(holdUntil: Int = 0) { self.holdUntil = holdUntil }

        var headers: [HTTPHeaders] { seen.withLock { $0 } }

        func handle(_ request: ServerRequest) async -> ServerResponse {
            seen.withLock { $0.append(request.headers) }
            if request.path == "/hang" { await release.wait() }
            if arrived.withLock({
                $0 += 1; return $0
            }) >= holdUntil {
                held.raise()
            }
            await held.wait()
            return ServerResponse(status: .ok, body: ByteBuffer(string: "\(request.uri) \(String(buffer: request.body))"))
        }
    }

    static func settings(_ pki: TestPKI, _ change: (inout UpstreamSettings) -> Void = { _ in }) -> UpstreamSettings {
        // Timeouts far beyond a TLS handshake of a debug build on a loaded machine.
        var settings = UpstreamSettings(connectTimeout: .seconds(60), requestTimeout: .seconds(120), trustedCAFiles: [pki.caFile])
        change(&settings)
        return settings
    }

    func post(_ transport: NegotiatedUpstream, _ url: String, _ body: String = "") async throws -> String {
        var headers = HTTPHeaders()
        headers.add(name: "TTL", value: "60")
        let response = try await transport.send(UpstreamRequest(url: url, headers: headers, body: ByteBuffer(string: body)))
        return "\(response.status) \(response.bodyText)"
    }

    @Test func anOriginOfferingHTTP2GetsEveryRequestAsAStreamOnOneConnection() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let echo = Echo(holdUntil: 5)
        let front = try await TLSFront.start(pki: pki, handler: echo)
        let transport = try NegotiatedUpstream(origin: front.baseURL, settings: Self.settings(pki), clock: nil)
        // Five requests held until all five are in progress: they can only be on one connection at once.
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<5 { group.addTask { try await post(transport, front.baseURL + "/m/\(i)", "b\(i)") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(answers) == Set((0..<5).map { "200 /m/\($0) b\($0)" }))
        #expect(front.http2Connections == 1)
        #expect(front.http1Connections == 0)
        #expect(front.maxInFlight == 5)
        #expect(transport.protocolSpoken == .http2)
        // Names in lower case (the front shows what the fake sees), the User-Agent added.
        #expect(echo.headers.first?.first(name: "ttl") == "60")
        #expect(echo.headers.first?.first(name: "user-agent") == HeraldVersion.userAgent)
        await transport.shutdown()
        await front.stop()
    }

    @Test func anOriginOfferingOnlyHTTP1IsSpokenToOverKeepAliveHTTP1() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let front = try await TLSFront.start(pki: pki, handler: Echo(), offer: .http1Only)
        let transport = try NegotiatedUpstream(origin: front.baseURL, settings: Self.settings(pki), clock: nil)
        for i in 0..<3 { #expect(try await post(transport, front.baseURL + "/h1/\(i)", "x") == "200 /h1/\(i) x") }
        #expect(transport.protocolSpoken == .http1)
        // Each request answered once: the connection that learnt the server's answer carried none.
        #expect(front.answered == 3)
        #expect(front.http2Connections == 0)
        // That first connection, and one keep-alive connection for the three requests.
        #expect(front.http1Connections == 2)
        await transport.shutdown()
        await front.stop()
    }

    @Test func withHTTP2OffAnHTTP2OriginIsSpokenToOverHTTP1() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let front = try await TLSFront.start(pki: pki, handler: Echo())
        let transport = try NegotiatedUpstream(origin: front.baseURL, settings: Self.settings(pki) { $0.http2 = false }, clock: nil)
        #expect(try await post(transport, front.baseURL + "/a", "x") == "200 /a x")
        #expect(front.http2Connections == 0)
        #expect(front.http1Connections == 1)
        await transport.shutdown()
        await front.stop()
    }

    @Test func theServersMaxConcurrentStreamsBoundsTheRequestsInFlight() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        // Held until two are in progress: had the limit not been kept, more would be.
        let front = try await TLSFront.start(pki: pki, handler: Echo(holdUntil: 2), maxConcurrentStreams: 2)
        let transport = try NegotiatedUpstream(origin: front.baseURL, settings: Self.settings(pki), clock: nil)
        let answered = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<8 { group.addTask { try await post(transport, front.baseURL + "/s/\(i)") } }
            return try await group.reduce(into: 0) { count, answer in count += answer.hasPrefix("200 ") ? 1 : 0 }
        }
        #expect(answered == 8)
        #expect(front.maxInFlight == 2)
        #expect(front.http2Connections == 1)
        await transport.shutdown()
        await front.stop()
    }

    @Test func ourOwnStreamLimitHoldsBelowTheServers() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let front = try await TLSFront.start(pki: pki, handler: Echo(holdUntil: 3), maxConcurrentStreams: 100)
        let transport = try NegotiatedUpstream(
            origin: front.baseURL, settings: Self.settings(pki) { $0.maxConcurrentStreams = 3 }, clock: nil)
        try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<9 { group.addTask { try await post(transport, front.baseURL + "/o/\(i)") } }
            for try await answer in group { #expect(answer.hasPrefix("200 ")) }
        }
        #expect(front.maxInFlight == 3)
        await transport.shutdown()
        await front.stop()
    }

    @Test func aResetStreamFailsThatRequestAloneAndTheConnectionStays() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let front = try await TLSFront.start(pki: pki, handler: Echo())
        let transport = try NegotiatedUpstream(origin: front.baseURL, settings: Self.settings(pki), clock: nil)
        #expect(try await post(transport, front.baseURL + "/1") == "200 /1 ")
        front.resetNextStreams(1)
        await #expect(throws: UpstreamConnectionError.reset(.cancel)) { try await post(transport, front.baseURL + "/2") }
        #expect(try await post(transport, front.baseURL + "/3") == "200 /3 ")
        #expect(front.resets == 1)
        #expect(front.answered == 2)
        #expect(front.http2Connections == 1)
        await transport.shutdown()
        await front.stop()
    }

    @Test func aStreamUnansweredByTheRequestTimeoutFailsAndTheConnectionServesTheNext() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let echo = Echo()
        let front = try await TLSFront.start(pki: pki, handler: echo)
        let transport = try NegotiatedUpstream(origin: front.baseURL, settings: Self.settings(pki), clock: nil)
        #expect(try await post(transport, front.baseURL + "/1") == "200 /1 ")  // the connection is open
        // Long enough for a loaded machine to answer `/2` within it.
        let short = try NegotiatedUpstream(
            origin: front.baseURL, settings: Self.settings(pki) { $0.requestTimeout = .seconds(10) }, clock: nil)
        await #expect(throws: Deadline.Exceeded.self) { try await post(short, front.baseURL + "/hang") }
        echo.release.raise()
        #expect(try await post(short, front.baseURL + "/2") == "200 /2 ")
        #expect(front.http2Connections == 2)  // one each: the timed-out stream did not cost `short` its connection
        await short.shutdown()
        await transport.shutdown()
        await front.stop()
    }

    @Test func throughTheOutboundProxyHTTP2IsNegotiatedInsideTheTunnel() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let front = try await TLSFront.start(pki: pki, handler: Echo())
        let proxy = try await FakeConnectProxy.start()
        let transport = try NegotiatedUpstream(
            origin: front.baseURL, settings: Self.settings(pki) { $0.proxy = ProxySettings(host: "127.0.0.1", port: proxy.port) },
            clock: nil)
        #expect(try await post(transport, front.baseURL + "/p", "x") == "200 /p x")
        #expect(proxy.connects == [FakeConnectProxy.Connect(target: "localhost:\(front.port)", authorized: true)])
        #expect(front.http2Connections == 1)
        await transport.shutdown()
        await proxy.stop()
        await front.stop()
    }

    @Test func theAddressCheckRefusesAPrivateOriginBeforeAnyConnection() async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let front = try await TLSFront.start(pki: pki, handler: Echo())
        let loopback = HostResolver { _, _ in .success(["127.0.0.1"]) }
        let transport = try NegotiatedUpstream(origin: front.baseURL, settings: Self.settings(pki), addressGuard: loopback, clock: nil)
        await #expect(throws: PeerAddressRefused.self) { try await post(transport, front.baseURL + "/x") }
        #expect(front.http2Connections + front.http1Connections == 0)
        #expect(front.answered == 0)
        await transport.shutdown()
        await front.stop()
    }

    /// Herald checks the fields it sends itself (the HTTP/2 connection no longer validates header
    /// blocks): a value with CR LF never leaves, over either protocol.
    @Test(arguments: [TLSFront.Offer.http2AndHTTP1, .http1Only])
    func aHeaderValueThatWouldSplitTheRequestIsNeverSent(_ offer: TLSFront.Offer) async throws {
        let pki = try TestPKI(directory: ScratchDirectory.make("herald-negotiated"))
        let front = try await TLSFront.start(pki: pki, handler: Echo(), offer: offer)
        let transport = try NegotiatedUpstream(origin: front.baseURL, settings: Self.settings(pki), clock: nil)
        #expect(try await post(transport, front.baseURL + "/ok") == "200 /ok ")
        for (name, value) in [("Topic", "a\r\nX-Injected: 1"), ("Topic", " padded"), ("Bad Name", "v"), ("Nul", "a\u{0}b")] {
            var headers = HTTPHeaders()
            headers.add(name: name, value: value)
            await #expect(throws: InvalidHeaderField(name: name)) {
                _ = try await transport.send(UpstreamRequest(url: front.baseURL + "/bad", headers: headers, body: nil))
            }
        }
        #expect(front.answered == 1)
        await transport.shutdown()
        await front.stop()
    }
}
