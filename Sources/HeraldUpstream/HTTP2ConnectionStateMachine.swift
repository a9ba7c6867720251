/// Which connection `HTTP2Upstream` sends on, as a value: none, one being opened (which later
/// requests wait for), one ready, or none any more (shut down). A connection retired (closed, sent
/// GOAWAY, out of stream ids) leaves it idle, and the next request opens a new one; the late end of
/// an attempt that is no longer the current one changes nothing. Tested without a socket
/// (`HTTP2ConnectionStateMachineTests`). `Connection` is the ready connection, `Pending` what a
/// request waits on while one is opened.
struct HTTP2ConnectionStateMachine<Connection, Pending> {
    enum State {
        case idle
        case connecting(attempt: Int, Pending)
        case ready(Connection)
        case shutDown
    }

    private(set) var state = State.idle
    private var attempts = 0

    enum Next {
        /// Send on this connection.
        case use(Connection)
        /// Wait for the connection being opened.
        case wait(Pending)
        /// Open a connection (attempt `attempt`), which `pending` will deliver; the request waits for it.
        case open(attempt: Int, Pending)
        /// Shut down: fail the request.
        case fail
    }

    /// Where a request goes. `usable`: whether the ready connection is still open; `pending`
    /// makes what requests wait on while a new connection is opened.
    mutating func next(usable: (Connection) -> Bool, pending: () -> Pending) -> Next {
        switch state {
        case .ready(let connection) where usable(connection): return .use(connection)
        case .connecting(_, let waiting): return .wait(waiting)
        case .shutDown: return .fail
        case .idle, .ready:
            attempts += 1
            let made = pending()
            state = .connecting(attempt: attempts, made)
            return .open(attempt: attempts, made)
        }
    }

    /// Attempt `attempt` ended: with its connection, which becomes the current one, or with nil
    /// (failed), which leaves none. Ignored unless it is the attempt under way.
    mutating func opened(attempt: Int, _ connection: Connection?) {
        guard case .connecting(let current, _) = state, current == attempt else { return }
        state = connection.map { .ready($0) } ?? .idle
    }

    /// The connection `isIt` picks is gone or going away: the next request opens a new one.
    mutating func retire(where isIt: (Connection) -> Bool) {
        if case .ready(let connection) = state, isIt(connection) { state = .idle }
    }

    /// Shuts down for good: the ready connection, if any, for its owner to close.
    mutating func shutDown() -> Connection? {
        defer { state = .shutDown }
        if case .ready(let connection) = state { return connection }
        return nil
    }
}
