import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// One long-lived HTTP/2 connection over TLS to one origin, on SwiftNIO directly: each request is a
/// stream with a single handler (`HTTP2Exchange`) that writes it and collects the answer on the
/// connection's event loop, so a request costs one hop there and one back (docs/architecture.md, "The upstream-call path").
///
/// The connection is opened on the first request, through the outbound proxy's CONNECT tunnel
/// unless the host is in its `NO_PROXY` list. Once it closes or the server sends GOAWAY, the next
/// request opens a new one; requests already on a closed connection fail as network errors (the
/// retry policy's to handle). Streams over the server's `MAX_CONCURRENT_STREAMS` wait in SwiftNIO
/// for a free one. `request_timeout` bounds each request from the moment it is sent for, and
/// `connect_timeout` the connection it may wait for.
public final class HTTP2Upstream: UpstreamTransport {
    public let settings: UpstreamSettings
    private let host: String
    private let port: Int
    private let authority: String
    /// The origin's URL prefix (`https://host[:port]`), cut from each request's URL.
    private let origin: String
    private let tls: NIOSSLContext
    private let state = Mutex(State.idle)

    private struct Connection: Sendable {
        let channel: any Channel
        let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    }

    private enum State {
        case idle
        case connecting(EventLoopFuture<Connection>)
        case ready(Connection)
        case shutDown
    }

    /// `origin` is `https://host[:port]`.
    public init(origin: String, settings: UpstreamSettings, tls: TLSConfiguration) throws {
        guard let components = URLComponents(string: origin), components.scheme?.lowercased() == "https",
            let host = components.host, !host.isEmpty
        else { throw HTTP2OriginError(origin: origin) }
        self.settings = settings
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = components.port ?? 443
        let hostForAuthority = self.host.contains(":") ? "[\(self.host)]" : self.host
        self.authority = port == 443 ? hostForAuthority : "\(hostForAuthority):\(port)"
        self.origin = origin.hasSuffix("/") ? String(origin.dropLast()) : origin
        var tls = tls
        tls.applicationProtocols = ["h2"]
        if !settings.trustedCAFiles.isEmpty { tls.additionalTrustRoots = settings.trustedCAFiles.map { .file($0) } }
        self.tls = try NIOSSLContext(configuration: tls)
    }

    public func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        let deadline = NIODeadline.now() + TimeAmount(settings.requestTimeout)
        let path = try self.path(of: request.url)
        let connection = try await connection()
        let loop = connection.channel.eventLoop
        let promise = loop.makePromise(of: UpstreamResponse.self)
        let headers = HTTP2Exchange.requestHeaders(request, authority: authority, path: path)
        let maxBodyBytes = settings.maxResponseBytes
        let body = request.body
        let stream = connection.multiplexer.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(
                    HTTP2Exchange(headers: headers, body: body, maxBodyBytes: maxBodyBytes, promise: promise))
            }
        }
        stream.whenFailure { promise.fail($0) }
        let limit = settings.requestTimeout
        let timeout = loop.scheduleTask(deadline: deadline) {
            promise.fail(Deadline.Exceeded(after: limit))
            stream.whenSuccess { $0.close(promise: nil) }
        }
        promise.futureResult.whenComplete { _ in timeout.cancel() }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(CancellationError())
            stream.whenSuccess { $0.close(promise: nil) }
        }
    }

    public func shutdown() async {
        let current = state.withLock { state -> Connection? in
            defer { state = .shutDown }
            if case .ready(let connection) = state { return connection }
            return nil
        }
        try? await current?.channel.close()
    }

    /// The request's path: its URL without this origin.
    private func path(of url: String) throws -> String {
        if url.hasPrefix(origin) {
            let rest = url.dropFirst(origin.utf8.count)
            if rest.isEmpty { return "/" }
            if rest.hasPrefix("/") { return String(rest) }
        }
        throw HTTP2OriginError(origin: url)
    }

    // MARK: The connection

    private enum Next {
        case use(Connection)
        case wait(EventLoopFuture<Connection>)
        case open(EventLoopPromise<Connection>)
        case fail
    }

    private func connection() async throws -> Connection {
        let next = state.withLock { state -> Next in
            switch state {
            case .ready(let connection) where connection.channel.isActive:
                return .use(connection)
            case .connecting(let future):
                return .wait(future)
            case .shutDown:
                return .fail
            case .idle, .ready:
                let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Connection.self)
                state = .connecting(promise.futureResult)
                return .open(promise)
            }
        }
        switch next {
        case .use(let connection):
            return connection
        case .wait(let future):
            return try await future.get()
        case .fail:
            throw HTTP2UpstreamError.shutDown
        case .open(let promise):
            open(promise)
            let future = promise.futureResult
            future.whenComplete { result in
                self.state.withLock { state in
                    guard case .connecting(let pending) = state, pending === future else { return }
                    switch result {
                    case .success(let connection): state = .ready(connection)
                    case .failure: state = .idle
                    }
                }
            }
            return try await future.get()
        }
    }

    /// Forgets `channel` as the current connection (closed, or going away).
    private func retire(_ channel: any Channel) {
        state.withLock { state in
            if case .ready(let connection) = state, connection.channel === channel { state = .idle }
        }
    }

    private func open(_ promise: EventLoopPromise<Connection>) {
        let loop = promise.futureResult.eventLoop
        let proxy = settings.proxy.flatMap { $0.bypasses(self.host) ? nil : $0 }
        let connectTimeout = TimeAmount(settings.connectTimeout)
        let linger = TimeAmount(settings.requestTimeout)
        let timeout = loop.scheduleTask(in: connectTimeout) { promise.fail(HTTP2UpstreamError.connectTimeout) }
        promise.futureResult.whenComplete { _ in timeout.cancel() }
        let (host, port, authority, tls) = (self.host, self.port, self.authority, self.tls)
        let serverName = Self.isIPAddress(host) ? nil : host
        ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: proxy?.host ?? host, port: proxy?.port ?? port)
            .flatMap { channel -> EventLoopFuture<Connection> in
                // A connection made after the deadline is closed, not kept.
                promise.futureResult.whenFailure { _ in channel.close(promise: nil) }
                let tunnel = channel.eventLoop.makePromise(of: Void.self)
                if let proxy {
                    do {
                        try channel.pipeline.syncOperations.addHandler(ConnectTunnel(target: authority, proxy: proxy, promise: tunnel))
                    } catch {
                        tunnel.fail(error)
                    }
                } else {
                    tunnel.succeed()
                }
                return tunnel.futureResult.flatMap { () -> EventLoopFuture<Connection> in
                    let ready = channel.eventLoop.makePromise(of: Void.self)
                    let connection: Connection
                    do {
                        let operations = channel.pipeline.syncOperations
                        try operations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        try operations.addHandler(HandshakeWatcher(promise: ready))
                        let multiplexer = try operations.configureHTTP2Pipeline(
                            mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                        ) { stream in stream.eventLoop.makeSucceededVoidFuture() }
                        try operations.addHandler(ConnectionWatcher(ready: ready, linger: linger) { [weak self] in self?.retire(channel) })
                        connection = Connection(channel: channel, multiplexer: multiplexer)
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                    channel.closeFuture.whenComplete { [weak self] _ in self?.retire(channel) }
                    return ready.futureResult.map { connection }
                }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }
            .cascade(to: promise)
    }

    private static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}

/// An upstream URL this transport cannot send to.
public struct HTTP2OriginError: Error, Sendable, CustomStringConvertible {
    public let origin: String
    public var description: String { "not an https:// URL of this upstream: \(origin)" }
}

/// Fails `promise` when TLS agrees on anything but HTTP/2, or fails, or the connection closes
/// first.
private final class HandshakeWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let promise: EventLoopPromise<Void>

    init(promise: EventLoopPromise<Void>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, negotiated != "h2" {
            promise.fail(HTTP2UpstreamError.notHTTP2)
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(HTTP2UpstreamError.closedUnanswered)
        context.fireChannelInactive()
    }
}

/// Watches the connection's own frames. The server's first SETTINGS succeeds `ready`: only then
/// is its `MAX_CONCURRENT_STREAMS` known, so no stream is opened before. A GOAWAY, or a protocol
/// error reported on the connection, retires it: the next request opens a new connection, the
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

    private func goAway(context: ChannelHandlerContext) {
        ready.fail(HTTP2UpstreamError.closedUnanswered)
        guard !retired else { return }
        retired = true
        retire()
        let channel = context.channel
        context.eventLoop.scheduleTask(in: linger) { channel.close(promise: nil) }
    }
}
