import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

@testable import Gateway

/// A request is served by the route table it started with (docs/operations.md, "Signals"): the
/// table is chosen once, at the request's head, and its body limit and its handler both come from
/// it, whatever a reload sets while the body is still arriving.
@Suite struct ReloadRouteTests {
    /// The gateway's swappable routes, telling the test when a request's head was resolved.
    final class Watched: HTTPHandler {
        let routes: SwappableRoutes
        let resolved = Atomic<Int>(0)

        init(_ routes: SwappableRoutes) { self.routes = routes }

        func handle(_ request: ServerRequest) async -> ServerResponse { await routes.handle(request) }

        func resolve(method: HTTPMethod, path: String) -> ResolvedRoute {
            defer { resolved.add(1, ordering: .relaxed) }
            return routes.resolve(method: method, path: path)
        }
    }

    static func table(_ name: String, maxBodyBytes: Int) -> Router {
        var table = RouteBuilder()
        table.add(.exact("/x"), [.POST], maxBodyBytes: maxBodyBytes) { request in
            ServerResponse(status: .ok, body: ByteBuffer(string: "\(name):\(request.body.readableBytes)"))
        }
        return table.router
    }

    @Test func aRequestAcrossASwapIsServedWhollyByTheTableItStartedWith() async throws {
        let routes = SwappableRoutes(Self.table("old", maxBodyBytes: 1000))
        let watched = Watched(routes)
        let server = try await HTTPServer.bind(
            host: "127.0.0.1", port: 0, handler: watched, logger: Logger(label: "test"), clock: SystemClock())
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await server.serve() }
            let client = BlockingClient(port: server.port, receiveBuffer: nil)
            defer { client.close() }
            client.send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\n12345")
            #expect(await eventually(within: .seconds(30)) { watched.resolved.load(ordering: .relaxed) == 1 })
            // The reload: a table whose limit the request's body exceeds and whose handler differs.
            routes.set(Self.table("new", maxBodyBytes: 4))
            client.send("67890")
            let answer = await client.readAllOffPool()
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
            #expect(answer.hasSuffix("old:10"), "\(answer)")
            await server.shutdown()
        }
    }
}
