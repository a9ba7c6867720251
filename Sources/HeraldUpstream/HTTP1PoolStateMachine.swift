/// The keep-alive connections of `HTTP1Upstream`, as a value: the open ones, the idle ones among
/// them (the newest last), and whether the pool is shut down. A request takes an idle connection,
/// one on its own event loop first ("One thread per request"), else the newest; with none it opens
/// one, which is admitted unless the pool shut down meanwhile. Tested without a socket
/// (`HTTP1PoolStateMachineTests`). `Connection` is a channel; `ObjectIdentifier`s name them.
struct HTTP1PoolStateMachine<Connection> {
    private var idle: [(id: ObjectIdentifier, connection: Connection)] = []
    private var open: [ObjectIdentifier: Connection] = [:]
    private(set) var isShutDown = false

    enum Take {
        /// Send on this idle connection (if it is still open; else take again).
        case reuse(Connection)
        /// No idle connection: open one.
        case open
        /// Shut down: fail the request.
        case shutDown
    }

    /// An idle connection for a request: one that `isLocal` picks first, else the newest.
    mutating func take(isLocal: (Connection) -> Bool) -> Take {
        guard !isShutDown else { return .shutDown }
        if let local = idle.lastIndex(where: { isLocal($0.connection) }) { return .reuse(idle.remove(at: local).connection) }
        if let newest = idle.popLast() { return .reuse(newest.connection) }
        return .open
    }

    /// A connection just opened: true when the pool keeps it (false: shut down meanwhile, close it).
    mutating func admit(_ connection: Connection, id: ObjectIdentifier) -> Bool {
        guard !isShutDown else { return false }
        open[id] = connection
        return true
    }

    /// A connection whose answer left it reusable: true when it waits for the next request (false:
    /// close it; the pool shut down or the connection is no longer `active`).
    mutating func putBack(_ connection: Connection, id: ObjectIdentifier, active: Bool) -> Bool {
        guard !isShutDown, active else { return false }
        idle.append((id, connection))
        return true
    }

    /// A connection closed: forgotten, idle or not.
    mutating func forget(_ id: ObjectIdentifier) {
        open[id] = nil
        idle.removeAll { $0.id == id }
    }

    /// Shuts down for good: the open connections, for their owner to close.
    mutating func shutDown() -> [Connection] {
        isShutDown = true
        idle = []
        return Array(open.values)
    }

    /// The idle connections, oldest first.
    var idleConnections: [Connection] { idle.map(\.connection) }
}
