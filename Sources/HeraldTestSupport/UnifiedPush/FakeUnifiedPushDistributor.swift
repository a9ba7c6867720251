import Foundation
package import HeraldCore
package import HeraldHTTPServer
import Logging
import NIOCore
package import NIOHTTP1
import Synchronization

/// A UnifiedPush distributor's push server (ntfy, NextPush…) on loopback: it takes a message
/// `POST`ed to an endpoint `/up/<name>` and records it; each endpoint answers as scripted.
package final class FakeUnifiedPushDistributor: HTTPHandler, Sendable {
    package struct Received: Sendable {
        package let path: String
        package let headers: HTTPHeaders
        package let body: [UInt8]
        package var json: JSONValue? { try? JSONParser.parse(body) }
    }

    package let server: HTTPServer
    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    private let serveTask: Mutex<Task<Void, Never>?> = Mutex(nil)
    private let state = Mutex<(received: [Received], statuses: [String: [Int]])>(([], [:]))

    package static func start() async throws -> FakeUnifiedPushDistributor {
        let box = HandlerBox<FakeUnifiedPushDistributor>()
        let server = try await HTTPServer.bind(
            host: "127.0.0.1", port: 0, handler: box, logger: Logger(label: "fake-unifiedpush"), clock: SystemClock())
        let distributor = FakeUnifiedPushDistributor(server: server)
        box.set(distributor)
        distributor.serveTask.withLock { $0 = Task { await server.serve() } }
        return distributor
    }

    private init(server: HTTPServer) { self.server = server }

    package func stop() async {
        await server.shutdown()
        await serveTask.withLock { $0 }?.value
    }

    /// A new endpoint URL; it answers `statuses` in turn (the last one repeats), 201 by default as
    /// ntfy does.
    package func endpoint(_ name: String = UUID().uuidString, statuses: [Int] = [201]) -> String {
        state.withLock { $0.statuses["/up/\(name)"] = statuses }
        return "\(baseURL)/up/\(name)"
    }

    package var received: [Received] { state.withLock { $0.received } }
    package func received(at endpoint: String) -> [Received] {
        let path = URLComponents(string: endpoint)?.path ?? endpoint
        return received.filter { $0.path == path }
    }

    package func handle(_ request: ServerRequest) async -> ServerResponse {
        let status = state.withLock { s -> Int in
            s.received.append(Received(path: request.path, headers: request.headers, body: Array(request.body.readableBytesView)))
            guard var statuses = s.statuses[request.path] else { return 404 }
            let next = statuses.count > 1 ? statuses.removeFirst() : statuses[0]
            s.statuses[request.path] = statuses
            return next
        }
        return ServerResponse(status: HTTPResponseStatus(statusCode: status))
    }
}
