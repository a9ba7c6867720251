package import HeraldCore
import NIOCore
import NIOHTTP1
import NIOPosix
package import NIOSSL
import Synchronization

/// A pool of keep-alive HTTP/1.1 connections to one origin, on SwiftNIO directly: at most
/// `max_connections` requests in flight (further ones wait their turn in the pool's one queue, by
/// source, for at most `request_timeout`: `AsyncLimiter`), each on a connection of
/// its own, an idle one reused before a new one is opened. A connection's single handler
/// (`HTTP1Exchange`) writes the request and collects the answer on its event loop, so a request
/// costs at most one hop there and one back (docs/architecture.md, "The upstream-call path").
///
/// Connections idle for 60 s are closed, as is one the server will not keep open, one that failed
/// or timed out. `request_timeout` bounds each request from the moment it is sent for, and
/// `connect_timeout` the connection it may open.
package final class HTTP1Upstream: UpstreamTransport {
    package let settings: UpstreamSettings
    private let origin: UpstreamOrigin
    private let connector: UpstreamConnector
    private let permits: AsyncLimiter
    /// What `request_timeout` runs on (the loops' own clock, but in tests).
    private let loopClock: any LoopClock
    private let state = Mutex(HTTP1PoolStateMachine<any Channel>())

    static let idleTimeout = TimeAmount.seconds(60)

    /// `origin` is `http(s)://host[:port]`. With an `addressGuard`, a connection made without the
    /// proxy goes only to addresses of the host that are all global, checked before it is opened
    /// (`UpstreamConnector`). The TLS context is one of `contexts`.
    package convenience init(
        origin: String, settings: UpstreamSettings, tls: TLSConfiguration? = nil, addressGuard: HostResolver? = nil,
        contexts: TLSContexts = TLSContexts(), clock: (any HeraldClock)?
    ) throws {
        let parsed = try UpstreamOrigin(origin)
        let context = parsed.secure ? try Self.tlsContext(tls, settings: settings, shared: contexts) : nil
        self.init(origin: parsed, settings: settings, tls: context, addressGuard: addressGuard, clock: clock)
    }

    /// With a TLS context made once for many origins (`OriginPools`); `clock` dates a request's
    /// wait for a connection.
    init(origin: UpstreamOrigin, settings: UpstreamSettings, tls: NIOSSLContext?, addressGuard: HostResolver?, clock: (any HeraldClock)?) {
        self.settings = settings
        self.origin = origin
        loopClock = clock?.loopClock ?? EventLoopClock()
        connector = UpstreamConnector(origin: origin, settings: settings, tls: tls, addressGuard: addressGuard, clock: loopClock)
        permits = AsyncLimiter(limit: settings.maxConnections, maxWait: settings.requestTimeout, clock: clock)
    }

    /// A client TLS context offering HTTP/1.1.
    static func tlsContext(_ tls: TLSConfiguration?, settings: UpstreamSettings, shared: TLSContexts = TLSContexts()) throws
        -> NIOSSLContext
    {
        var tls = tls ?? .makeClientConfiguration()
        tls.applicationProtocols = ["http/1.1"]
        return try UpstreamConnector.tlsContext(tls, settings: settings, shared: shared)
    }

    package func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
        let deadline = loopClock.now(on: loop) + TimeAmount(settings.requestTimeout)
        let head = try requestHead(request)
        try await permits.acquire(turn: RequestContext.source)
        defer { permits.release() }
        let channel = try await connection()
        let slot = ResponseSlot<HTTP1Exchange.Received>()
        let exchange = HTTP1Exchange.Request(
            head: head, body: request.body, answer: slot, deadline: deadline, timeout: settings.requestTimeout)
        channel.writeAndFlush(exchange).whenFailure { slot.fail($0) }
        let answer: HTTP1Exchange.Received
        do {
            answer = try await withTaskCancellationHandler {
                try await slot.value()
            } onCancel: {
                slot.fail(CancellationError())
            }
        } catch {
            // A connection whose request did not end with a complete answer is not reused.
            channel.close(promise: nil)
            throw error
        }
        if answer.reusable { putBack(channel) }
        return answer.response
    }

    package func shutdown() async {
        let open = state.withLock { $0.shutDown() }
        // Closed together, then awaited: a TLS close may wait for the peer's answer.
        let closing = open.map { channel in
            let promise = channel.eventLoop.makePromise(of: Void.self)
            channel.close(promise: promise)
            return promise.futureResult
        }
        for closed in closing { try? await closed.get() }
    }

    private func requestHead(_ request: UpstreamRequest) throws -> HTTPRequestHead {
        try InvalidHeaderField.check(request.headers)
        var headers = request.headers
        // The request's fields are copied once, with room for the three added here.
        headers.reserveCapacity(headers.count + 3)
        headers.replaceOrAdd(name: "Host", value: origin.authority)
        if !headers.contains(name: "user-agent") { headers.add(name: "User-Agent", value: HeraldVersion.userAgent) }
        headers.replaceOrAdd(name: "Content-Length", value: String(request.body?.readableBytes ?? 0))
        return HTTPRequestHead(version: .http1_1, method: request.method, uri: try origin.target(of: request), headers: headers)
    }

    /// An idle connection that is still open, or a new one. Idle connections on the caller's own
    /// event loop come first, and a new one is opened there: a request then stays on one thread
    /// (docs/architecture.md, "One thread per request").
    private func connection() async throws -> any Channel {
        reuse: while true {
            switch state.withLock({ $0.take { $0.eventLoop.inEventLoop } }) {
            case .shutDown: throw UpstreamConnectionError.shutDown
            case .open: break reuse
            case .reuse(let reused): if reused.isActive { return reused }  // else: closed while idle, take again
            }
        }
        let maxBodyBytes = settings.maxResponseBytes
        let loopClock = self.loopClock
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        let channel = try await connector.connect(on: loop) { channel in
            let operations = channel.pipeline.syncOperations
            // Herald's own request encoder (one buffer a request), SwiftNIO's response decoder.
            try operations.addHandler(HTTP1RequestEncoder())
            try operations.addHandler(ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)))
            // Idle is "nothing read for a while": every request is answered by a read, and the
            // exchange closes only a connection with nothing in flight. A write or all timeout
            // would have the handler make a promise and a callback for every write, to note the
            // time each write completed.
            try operations.addHandler(IdleStateHandler(readTimeout: Self.idleTimeout))
            try operations.addHandler(HTTP1Exchange(maxBodyBytes: maxBodyBytes, clock: loopClock))
            return channel.eventLoop.makeSucceededFuture(channel)
        }.get()
        let admitted = state.withLock { $0.admit(channel, id: ObjectIdentifier(channel)) }
        guard admitted else {
            channel.close(promise: nil)
            throw UpstreamConnectionError.shutDown
        }
        channel.closeFuture.whenComplete { _ in self.forget(channel) }
        return channel
    }

    /// The event loops of the idle connections, oldest first (for tests and diagnostics).
    var idleConnectionLoops: [any EventLoop] { state.withLock { $0.idleConnections.map(\.eventLoop) } }

    private func putBack(_ channel: any Channel) {
        let kept = state.withLock { $0.putBack(channel, id: ObjectIdentifier(channel), active: channel.isActive) }
        if !kept { channel.close(promise: nil) }
    }

    private func forget(_ channel: any Channel) {
        state.withLock { $0.forget(ObjectIdentifier(channel)) }
    }
}
