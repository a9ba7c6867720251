import HeraldHTTPServer
import ServiceLifecycle

/// A bound HTTP listener as a service: it accepts once the front ends are ready, and on graceful
/// shutdown stops accepting, lets requests in progress finish and closes idle connections.
struct ListenerService: Service {
    let server: HTTPServer
    let ready: @Sendable () async throws -> Void

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await ready() }
        } catch is CancellationError where Task.isShuttingDownGracefully {
            // Shut down before the front ends were ready: close the listener and stop.
        }
        if Task.isShuttingDownGracefully { server.initiateShutdown() }
        let server = self.server
        await withGracefulShutdownHandler {
            await server.serve()
        } onGracefulShutdown: {
            server.initiateShutdown()
        }
    }
}

/// Holds pushkins for the group's lifetime and closes their upstream connections when the group
/// stops (`Gateway.close`, which also closes the pushkins a reload made).
struct PushkinsService: Service {
    let close: @Sendable () async -> Void

    func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}
