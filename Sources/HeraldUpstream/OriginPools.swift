package import HeraldCore
import Synchronization

/// One `NegotiatedUpstream` per origin, for upstreams whose URLs name many hosts (the push services
/// of Web Push and UnifiedPush endpoints): HTTP/2 where the origin's server takes it, keep-alive
/// HTTP/1.1 where not. A pool is made on an origin's first request; past `maxOrigins` the least
/// recently used one is shut down to make room.
package final class OriginPools: UpstreamTransport {
    package let settings: UpstreamSettings
    /// Resolves and checks each origin's addresses before a connection is opened; nil for none.
    private let addressGuard: HostResolver?
    private let maxOrigins: Int
    /// Where the https origins' TLS context comes from, made on the first and shared by all.
    private let contexts: TLSContexts
    private let state = Mutex(State())
    /// What the pools date a request's wait for a stream on.
    private let clock: (any HeraldClock)?

    private struct State {
        var pools: [String: (pool: NegotiatedUpstream, lastUse: Int)] = [:]
        var uses = 0
        var shutDown = false
    }

    package init(
        settings: UpstreamSettings, addressGuard: HostResolver?, maxOrigins: Int = 1024, contexts: TLSContexts = TLSContexts(),
        clock: (any HeraldClock)?
    ) {
        self.clock = clock
        self.settings = settings
        self.contexts = contexts
        self.addressGuard = addressGuard
        self.maxOrigins = max(1, maxOrigins)
    }

    package func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        if let pool = existingPool(for: request.url) { return try await pool.send(request) }
        let origin = try UpstreamOrigin(request.url)
        let (pool, evicted) = try pool(for: origin)
        await evicted?.shutdown()
        return try await pool.send(request)
    }

    /// The pool already made for the origin `url` starts with, found without parsing the URL again
    /// (Foundation's parser costs a few microseconds a request; the origin was parsed when its pool
    /// was made). The pool refuses a URL that is no request target (`UpstreamOrigin.path(of:)`).
    private func existingPool(for url: String) -> NegotiatedUpstream? {
        let prefix = UpstreamOrigin.prefix(of: url)
        return state.withLock { state in state.shutDown ? nil : Self.use(prefix, in: &state) }
    }

    /// The pool of `prefix`, if there is one, marked as the most recently used.
    private static func use(_ prefix: String, in state: inout State) -> NegotiatedUpstream? {
        guard let entry = state.pools[prefix] else { return nil }
        state.uses += 1
        state.pools[prefix] = (entry.pool, state.uses)
        return entry.pool
    }

    package func shutdown() async {
        let pools = state.withLock { state -> [NegotiatedUpstream] in
            state.shutDown = true
            defer { state.pools = [:] }
            return state.pools.values.map(\.pool)
        }
        for pool in pools { await pool.shutdown() }
    }

    /// The origin's pool, and the one shut out to make room for it, if any.
    private func pool(for origin: UpstreamOrigin) throws -> (NegotiatedUpstream, NegotiatedUpstream?) {
        // Made outside the lock: the first one makes the TLS context, which reads the trust store.
        // One made in vain (another request made the origin's pool meanwhile) holds no connection.
        let made = try NegotiatedUpstream(
            origin: origin, settings: settings, addressGuard: addressGuard, contexts: contexts, clock: clock)
        return try state.withLock { state in
            guard !state.shutDown else { throw UpstreamConnectionError.shutDown }
            if let pool = Self.use(origin.prefix, in: &state) { return (pool, nil) }
            state.uses += 1
            var evicted: NegotiatedUpstream?
            if state.pools.count >= maxOrigins, let oldest = state.pools.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                evicted = oldest.value.pool
                state.pools[oldest.key] = nil
            }
            state.pools[origin.prefix] = (made, state.uses)
            return (made, evicted)
        }
    }
}
