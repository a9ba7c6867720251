import HeraldHTTPServer
import Synchronization

/// Lets a fake's server be bound (so its port is known) before the fake that answers exists.
final class HandlerBox<Target: HTTPHandler>: HTTPHandler, Sendable {
    private let target = Mutex<Target?>(nil)

    func set(_ value: Target) { target.withLock { $0 = value } }

    func handle(_ request: ServerRequest) async -> ServerResponse {
        guard let handler = target.withLock({ $0 }) else { return ServerResponse(status: .serviceUnavailable) }
        return await handler.handle(request)
    }
}
