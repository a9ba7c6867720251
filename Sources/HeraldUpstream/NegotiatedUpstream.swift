package import HeraldCore
import NIOSSL
import Synchronization

/// One origin, spoken to over HTTP/2 when its server takes it and over HTTP/1.1 when not
/// (docs/architecture.md, "The upstream-call path"). An https origin is offered `h2` and
/// `http/1.1` by ALPN on its first connection:
/// - if the server picks `h2`, every request is a stream on that one connection (an `HTTP2Pool`
///   of one), at most `max_concurrent_streams` at a time and never more than the server's
///   `MAX_CONCURRENT_STREAMS`; a connection lost or sent GOAWAY is replaced on the next request;
/// - if it picks `http/1.1` or nothing, that connection is closed before any request is written
///   on it, and the origin's requests go to keep-alive HTTP/1.1 connections (`HTTP1Upstream`,
///   up to `max_connections`) from then on.
///
/// The answer is kept for the life of the origin's transport. An `http://` origin, and any origin
/// when `http2` is off, is spoken to over HTTP/1.1 only (HTTP/2 without TLS is not offered).
/// Both protocols share the deadlines (`request_timeout` from the moment a request is sent for,
/// `connect_timeout` for a connection), the address policy and the outbound proxy
/// (`UpstreamConnector`), so the call above (`UpstreamCall`) does not know which one was spoken.
package final class NegotiatedUpstream: UpstreamTransport {
    package let settings: UpstreamSettings
    private let origin: UpstreamOrigin
    private let addressGuard: HostResolver?
    private let contexts: TLSContexts
    private let http2: HTTP2Pool?
    /// Made on the first request that needs it: an origin that speaks HTTP/2 never makes the
    /// HTTP/1.1 TLS context (about 1 MiB, docs/operations.md, "Memory").
    private let http1 = Mutex<HTTP1Upstream?>(nil)
    private let shutDown = Atomic<Bool>(false)
    private let choice: Mutex<ProtocolChoice>
    private let clock: (any HeraldClock)?

    package typealias Spoken = ProtocolChoice.Spoken

    /// `origin` is `http(s)://host[:port]`. With an `addressGuard`, connections made without the
    /// proxy go to checked addresses only. TLS contexts are those of `contexts`.
    package convenience init(
        origin: String, settings: UpstreamSettings, addressGuard: HostResolver? = nil, contexts: TLSContexts = TLSContexts(),
        clock: (any HeraldClock)?
    ) throws {
        try self.init(
            origin: try UpstreamOrigin(origin), settings: settings, addressGuard: addressGuard, contexts: contexts, clock: clock)
    }

    /// `clock` dates how long a request waits for a stream.
    init(
        origin: UpstreamOrigin, settings: UpstreamSettings, addressGuard: HostResolver?, contexts: TLSContexts,
        clock: (any HeraldClock)?
    ) throws {
        self.settings = settings
        self.origin = origin
        self.addressGuard = addressGuard
        self.contexts = contexts
        self.clock = clock
        if origin.secure && settings.http2 {
            let connection = try HTTP2Upstream(
                origin: origin, settings: settings, tls: .makeClientConfiguration(), offering: ["h2", "http/1.1"],
                addressGuard: addressGuard, contexts: contexts, loopClock: clock?.loopClock ?? EventLoopClock())
            http2 = HTTP2Pool(connections: [connection], settings: settings, clock: clock)
        } else {
            http2 = nil
        }
        choice = Mutex(ProtocolChoice(offersHTTP2: http2 != nil))
    }

    /// What the server agreed to so far (for tests and diagnostics).
    package var protocolSpoken: Spoken { choice.withLock(\.spoken) }

    package func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        if let http2, choice.withLock(\.triesHTTP2) {
            do {
                let response = try await http2.send(request)
                choice.withLock { $0.answeredOverHTTP2() }
                return response
            } catch UpstreamConnectionError.notHTTP2 {
                // Nothing was written on that connection: the request goes out once, over HTTP/1.1.
                choice.withLock { $0.refusedHTTP2() }
            }
        }
        return try await http1Upstream().send(request)
    }

    package func shutdown() async {
        shutDown.store(true, ordering: .relaxed)
        await http2?.shutdown()
        await http1.withLock { $0 }?.shutdown()
    }

    /// The HTTP/1.1 connections, made on first use.
    private func http1Upstream() throws -> HTTP1Upstream {
        if let made = http1.withLock({ $0 }) { return made }
        let tls: NIOSSLContext? = origin.secure ? try HTTP1Upstream.tlsContext(nil, settings: settings, shared: contexts) : nil
        let made = HTTP1Upstream(origin: origin, settings: settings, tls: tls, addressGuard: addressGuard, clock: clock)
        return try http1.withLock { http1 in
            if let earlier = http1 { return earlier }
            guard !shutDown.load(ordering: .relaxed) else { throw UpstreamConnectionError.shutDown }
            http1 = made
            return made
        }
    }
}
