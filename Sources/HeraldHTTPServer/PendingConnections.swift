import HeraldCore
import NIOCore
import Synchronization

/// The connections a listener has accepted and wrapped but not yet handed to `HTTPServer.serve()`.
///
/// When the listener closes, SwiftNIO drops the connections still on their way to the accept loop;
/// a dropped connection would be left open with no owner and no task to answer it. So each
/// connection is recorded here when it is made and forgotten when the loop takes it; once the loop
/// has ended, the rest are closed, and no connection is made any more.
final class PendingConnections: Sendable {
    private struct State {
        var open = true
        var waiting: [ObjectIdentifier: ServerConnection] = [:]
    }
    private let state = Mutex(State())

    /// Makes a connection and records it; nil once the listener is done taking connections.
    func make(for channel: any Channel, _ wrap: () -> ServerConnection) -> ServerConnection? {
        state.withLock { state in
            guard state.open else { return nil }
            let connection = wrap()
            state.waiting[ObjectIdentifier(channel)] = connection
            return connection
        }
    }

    /// The accept loop took `connection`: it is the loop's to close now.
    func taken(_ connection: ServerConnection) {
        _ = state.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(connection.channel)) }
    }

    /// After the accept loop: stops making connections, and returns those it never took.
    func closeAll() -> [ServerConnection] {
        state.withLock { state in
            state.open = false
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
    }

    /// The listener is closing: connections accepted from now on are refused.
    struct Closed: Error {}
}
