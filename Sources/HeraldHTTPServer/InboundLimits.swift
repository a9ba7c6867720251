package import HeraldCore
package import NIOCore

/// The limits a listener enforces on the network (docs/configuration.md, `http`).
package struct InboundLimits: Sendable {
    /// Connections open at once; beyond, a new connection is answered 503 and closed.
    package var maxConnections = 10_000
    /// From a request's first byte to its last (head and body): a client trickling its head or its
    /// body (slowloris) is answered 408 and cut.
    package var requestReadTimeout: TimeAmount = .seconds(30)
    /// An idle keep-alive connection is closed after this.
    package var idleTimeout: TimeAmount = .seconds(75)
    /// After a 413, this much of the refused body is read and thrown away.
    package var maxDiscardedBodyBytes = 8 << 20
    /// Request-body bytes held in memory across every connection of every listener sharing it.
    package var bodyBudget: BodyBudget?
    /// On shutdown, how long a connection that has not started its first request gets to start it
    /// (`FirstRequestGrace`).
    package var shutdownFirstRequestWait: TimeAmount = .seconds(2)
    /// `http.trusted_proxies`: peers whose `X-Forwarded-For` names the request's source
    /// (`RequestSource`); from any other peer the header is ignored.
    package var trustedProxies: [IPNetwork] = []

    package init() {}
}

/// Request-body bytes held in memory, bounded across connections: past the bound a request is
/// answered 503 with `Retry-After` (the sender tries again when memory is free).
package final class BodyBudget: Sendable {
    package let limit: Int
    private let held = AtomicCounter()

    package init(limit: Int) { self.limit = limit }

    package var inUse: Int { held.current }

    /// Takes `bytes`; false (taking nothing) when that would pass the limit.
    func take(_ bytes: Int) -> Bool {
        if held.add(bytes) > limit {
            held.add(-bytes)
            return false
        }
        return true
    }

    func release(_ bytes: Int) { if bytes > 0 { held.add(-bytes) } }
}
