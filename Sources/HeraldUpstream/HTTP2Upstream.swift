import FoundationEssentials
import HeraldCore
package import NIOCore
package import NIOHTTP2
import NIOPosix
package import NIOSSL
import NIOTLS
import Synchronization

/// One long-lived HTTP/2 connection over TLS to one origin, on SwiftNIO directly: each request is a
/// stream that `HTTP2Streams` opens, writes and collects the answer of on the connection's event
/// loop (`HTTP2Exchange`), so a request costs at most one hop there and one back
/// (docs/architecture.md, "The upstream-call path").
///
/// The connection is opened on the first request, through the outbound proxy's CONNECT tunnel
/// unless the host is in its `NO_PROXY` list. Once it closes or the server sends GOAWAY, the next
/// request opens a new one; requests already on a closed connection fail as network errors (the
/// retry policy's to handle). Streams over the server's `MAX_CONCURRENT_STREAMS` wait in SwiftNIO
/// for a free one. `request_timeout` bounds each request from the moment it is sent for, and
/// `connect_timeout` the connection it may wait for.
package final class HTTP2Upstream: UpstreamTransport {
    package let settings: UpstreamSettings
    private let origin: UpstreamOrigin
    private let connector: UpstreamConnector
    /// Where connections are opened; without one, on the requesting event loop.
    private let eventLoop: (any EventLoop)?
    private let state = Mutex(HTTP2ConnectionStateMachine<Connection, EventLoopPromise<Connection>>())
    /// What `request_timeout` runs on (the loops' own clock, but in tests).
    private let loopClock: any LoopClock
    /// The first stream id of each connection (tests start near the last to see a connection use them up).
    let firstStreamID: HTTP2StreamID

    private struct Connection: Sendable {
        let channel: any Channel
        let streams: NIOLoopBound<HTTP2Streams>
    }

    /// `origin` is `https://host[:port]`. Connections are opened on `eventLoop`, or without one on
    /// the event loop of the request that opens them. The TLS context is one of `contexts`.
    package convenience init(
        origin: String, settings: UpstreamSettings, tls: TLSConfiguration, eventLoop: (any EventLoop)? = nil,
        contexts: TLSContexts = TLSContexts(), firstStreamID: HTTP2StreamID = 1
    ) throws {
        let parsed = try UpstreamOrigin(origin)
        guard parsed.secure else { throw UpstreamOriginError(url: origin) }
        try self.init(
            origin: parsed, settings: settings, tls: tls, offering: ["h2"], eventLoop: eventLoop, contexts: contexts,
            firstStreamID: firstStreamID, loopClock: EventLoopClock())
    }

    /// `offering` is what TLS offers by ALPN: a connection on which the server picks anything but
    /// `h2` fails its requests with `UpstreamConnectionError.notHTTP2` before any is sent
    /// (`NegotiatedUpstream` then speaks HTTP/1.1). With an `addressGuard`, a connection made
    /// without the proxy goes only to checked addresses (`UpstreamConnector`).
    init(
        origin: UpstreamOrigin, settings: UpstreamSettings, tls: TLSConfiguration, offering protocols: [String],
        eventLoop: (any EventLoop)? = nil, addressGuard: HostResolver? = nil, contexts: TLSContexts = TLSContexts(),
        firstStreamID: HTTP2StreamID = 1, loopClock: any LoopClock
    ) throws {
        self.firstStreamID = firstStreamID
        self.loopClock = loopClock
        self.settings = settings
        self.origin = origin
        self.eventLoop = eventLoop
        var tls = tls
        tls.applicationProtocols = protocols
        connector = UpstreamConnector(
            origin: origin, settings: settings, tls: try UpstreamConnector.tlsContext(tls, settings: settings, shared: contexts),
            addressGuard: addressGuard, clock: loopClock)
    }

    package func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        let deadline = loopClock.now(on: clockLoop) + TimeAmount(settings.requestTimeout)
        let path = try origin.target(of: request)
        let headers = try HTTP2Exchange.requestHeaders(request, authority: origin.authority, path: path)
        let connection = try await connection()
        let loop = connection.channel.eventLoop
        let exchange = HTTP2Exchange(headers: headers, body: request.body, deadline: deadline, timeout: settings.requestTimeout)
        let streams = connection.streams
        if loop.inEventLoop {
            streams.value.start(exchange)
        } else {
            loop.execute { streams.value.start(exchange) }
        }
        return try await withTaskCancellationHandler {
            try await exchange.answer.value()
        } onCancel: {
            exchange.answer.fail(CancellationError())
            loop.execute { streams.value.abandon(exchange) }
        }
    }

    /// The event loop whose clock dates a request's deadline: where connections are opened.
    private var clockLoop: any EventLoop {
        eventLoop ?? MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
    }

    /// Whether the connection is ready and lives on the calling thread's event loop.
    package var isOnCurrentEventLoop: Bool {
        state.withLock { state in
            if case .ready(let connection) = state.state { return connection.channel.eventLoop.inEventLoop }
            return false
        }
    }

    package func shutdown() async {
        let current = state.withLock { $0.shutDown() }
        try? await current?.channel.close()
    }

    // MARK: The connection

    private func connection() async throws -> Connection {
        let next = state.withLock { state in
            state.next(usable: { $0.channel.isActive }) {
                let loop = eventLoop ?? MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
                return loop.makePromise(of: Connection.self)
            }
        }
        switch next {
        case .use(let connection): return connection
        case .wait(let pending): return try await pending.futureResult.get()
        case .open(let attempt, let pending):
            open(pending, attempt: attempt)
            return try await pending.futureResult.get()
        case .fail: throw UpstreamConnectionError.shutDown
        }
    }

    /// Forgets `channel` as the current connection (closed, or going away).
    private func retire(_ channel: any Channel) {
        state.withLock { $0.retire { $0.channel === channel } }
    }

    /// Opens a connection for `promise` (attempt `attempt`), and makes it the current one once it is ready.
    private func open(_ promise: EventLoopPromise<Connection>, attempt: Int) {
        let future = promise.futureResult
        future.whenComplete { result in
            self.state.withLock { $0.opened(attempt: attempt, try? result.get()) }
        }
        let linger = TimeAmount(settings.requestTimeout)
        let firstStreamID = self.firstStreamID
        let maxBodyBytes = settings.maxResponseBytes
        let loopClock = self.loopClock
        connector.connect(on: future.eventLoop) { [weak self] channel in
            let ready = channel.eventLoop.makePromise(of: Void.self)
            let operations = channel.pipeline.syncOperations
            try operations.addHandler(HandshakeWatcher(promise: ready))
            try operations.addHandler(FlushCoalescer())
            // Herald checks the fields it sends (`InvalidHeaderField`) and reads of an answer only
            // its `:status`, checked, and header values as text (`HTTP2Exchange`): NIOHTTP2's
            // validation of every header block, both ways, would repeat that work per request.
            try operations.addHandler(NIOHTTP2Handler(mode: .client, headerBlockValidation: .disabled))
            let streams = HTTP2Streams(firstStreamID: firstStreamID, maxBodyBytes: maxBodyBytes, clock: loopClock)
            try operations.addHandler(streams)
            try operations.addHandler(ConnectionWatcher(ready: ready, linger: linger) { [weak self] in self?.retire(channel) })
            channel.closeFuture.whenComplete { [weak self] _ in self?.retire(channel) }
            let connection = Connection(channel: channel, streams: NIOLoopBound(streams, eventLoop: channel.eventLoop))
            return ready.futureResult.map { connection }
        }.cascade(to: promise)
    }
}

/// Fails `promise` when TLS agrees on anything but HTTP/2, or fails, or the connection closes
/// first.
private final class HandshakeWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let promise: EventLoopPromise<Void>

    init(promise: EventLoopPromise<Void>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, negotiated != "h2" {
            promise.fail(UpstreamConnectionError.notHTTP2)
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(UpstreamConnectionError.closedUnanswered)
        context.fireChannelInactive()
    }
}

/// Watches the connection's own frames. The server's first SETTINGS succeeds `ready`: only then
/// is its `MAX_CONCURRENT_STREAMS` known, so no stream is opened before. A GOAWAY, a protocol
/// error reported on the connection, or its last stream id used, retires it: the next request opens a new connection, the
/// streams in flight here may still finish, and the connection is closed once they have had
/// `linger` (the request timeout) to do so.
private final class ConnectionWatcher: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    private let ready: EventLoopPromise<Void>
    private let retire: @Sendable () -> Void
    private let linger: TimeAmount
    private var retired = false

    init(ready: EventLoopPromise<Void>, linger: TimeAmount, retire: @escaping @Sendable () -> Void) {
        self.ready = ready
        self.linger = linger
        self.retire = retire
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data).payload {
        case .settings(.settings): ready.succeed()
        case .goAway: goAway(context: context)
        default: break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        goAway(context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is HTTP2Streams.StreamIDsExhausted { goAway(context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    private func goAway(context: ChannelHandlerContext) {
        ready.fail(UpstreamConnectionError.closedUnanswered)
        guard !retired else { return }
        retired = true
        retire()
        let channel = context.channel
        context.eventLoop.scheduleTask(in: linger) { channel.close(promise: nil) }
    }
}
