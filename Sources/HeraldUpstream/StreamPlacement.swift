/// Which of an HTTP/2 pool's connections a request's stream goes on, as a value: the requests in
/// flight on each, at most `limit` on one. A request goes to a connection on its own event loop
/// while that one has a free stream (no hand-over between threads: docs/architecture.md, "One
/// thread per request"), otherwise to the least busy. It never waits: the pool admits no more
/// requests than its connections have streams (`HTTP2Pool`), so one always has room. Tested
/// without a socket (`StreamPlacementTests`).
struct StreamPlacement {
    let limit: Int
    private(set) var inFlight: [Int]

    init(connections: Int, limit: Int) {
        self.limit = max(1, limit)
        inFlight = Array(repeating: 0, count: max(1, connections))
    }

    /// The connection for the next stream; `isLocal` says which are on the caller's event loop.
    mutating func place(isLocal: (Int) -> Bool) -> Int {
        var chosen = 0
        if inFlight.count > 1 {
            for i in 1..<inFlight.count where inFlight[i] < inFlight[chosen] { chosen = i }
            if let local = inFlight.indices.first(where: { inFlight[$0] < limit && isLocal($0) }) { chosen = local }
        }
        inFlight[chosen] += 1
        return chosen
    }

    /// The stream on `connection` ended.
    mutating func done(_ connection: Int) {
        inFlight[connection] -= 1
    }
}
