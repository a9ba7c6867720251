import HeraldTestSupport
import NIOCore
import NIOHTTP1
import Testing

@testable import Pushkins

/// Herald's own keep-alive HTTP/1.1 client (`HTTP1Upstream`, FCM's transport) against a real
/// server on loopback: what it sends, how it reuses and bounds connections, and how it ends a
/// request that gets no answer.
@Suite struct HTTP1UpstreamTests {
    func post(_ transport: HTTP1Upstream, _ base: String, _ path: String, _ body: String) async throws -> UpstreamResponse {
        try await transport.send(UpstreamRequest(url: base + path, headers: HTTPHeaders(), body: ByteBuffer(string: body)))
    }

    @Test func connectionsAreReusedAndNeverMoreThanMaxConnections() async throws {
        let server = try await EchoHTTP1Server.start()
        var options = EchoHTTP1Server.Options()
        options.delay = .milliseconds(20)
        server.set(options)
        let transport = try HTTP1Upstream(origin: server.baseURL, settings: UpstreamSettings(maxConnections: 3))
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

    @Test func aConnectionTheServerClosesIsNotReused() async throws {
        let server = try await EchoHTTP1Server.start()
        var options = EchoHTTP1Server.Options()
        options.closeAfterEachAnswer = true
        server.set(options)
        let transport = try HTTP1Upstream(origin: server.baseURL, settings: UpstreamSettings(maxConnections: 1))
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
        slow.delay = .seconds(30)
        server.set(slow)
        let transport = try HTTP1Upstream(
            origin: server.baseURL, settings: UpstreamSettings(maxConnections: 1, requestTimeout: .seconds(2)))
        let started = ContinuousClock.now
        await #expect(throws: Deadline.Exceeded.self) { _ = try await post(transport, server.baseURL, "/slow", "") }
        #expect(ContinuousClock.now - started < .seconds(20))  // not the server's 30 s
        server.set(EchoHTTP1Server.Options())
        let response = try await post(transport, server.baseURL, "/next", "")
        #expect(String(buffer: response.body) == "/next ")  // not the slow request's late answer
        #expect(server.connections == 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test func theAnswerIsReadOnlyUpToMaxResponseBytesAndTheHostAndLengthAreSent() async throws {
        let server = try await EchoHTTP1Server.start()
        let transport = try HTTP1Upstream(origin: server.baseURL, settings: UpstreamSettings(maxResponseBytes: 8))
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
            settings: UpstreamSettings(proxy: ProxySettings(host: "127.0.0.1", port: proxy.port, username: "u", password: "p")))
        let response = try await post(transport, server.baseURL, "/via", "proxy")
        #expect(String(buffer: response.body) == "/via proxy")
        #expect(proxy.connects == [.init(target: "127.0.0.1:\(server.port)", authorized: true)])
        await transport.shutdown()
        await proxy.stop()
        await server.stop()
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
}
