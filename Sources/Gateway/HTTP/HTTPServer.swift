import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix

/// An HTTP/1.1 server on SwiftNIO.
///
/// Bodies are read whole up to `maxBodyBytes`; a larger one (announced or streamed) is answered
/// 413 at once and the connection closed, so it is never left half-read. `shutdown()` stops
/// accepting, lets requests in progress finish and closes idle keep-alive connections.
public final class HTTPServer: Sendable {
    public typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    public let localAddress: SocketAddress
    private let channel: NIOAsyncChannel<Connection, Never>
    private let quiesce: ServerQuiescingHelper
    private let handler: any HTTPHandler
    private let maxBodyBytes: @Sendable (String) -> Int
    private let logger: Logger

    public static func bind(
        host: String, port: Int, handler: any HTTPHandler, maxBodyBytes: @escaping @Sendable (String) -> Int = { _ in 512 * 1024 },
        idleTimeout: TimeAmount = .seconds(75), logger: Logger
    ) async throws -> HTTPServer {
        let group = MultiThreadedEventLoopGroup.singleton
        let quiesce = ServerQuiescingHelper(group: group)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiesce.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .bind(host: host, port: port) { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: idleTimeout))
                    try child.pipeline.syncOperations.addHandler(IdleCloser())
                    try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    return try Connection(
                        wrappingChannelSynchronously: child, configuration: .init(isOutboundHalfClosureEnabled: true))
                }
            }
        guard let address = channel.channel.localAddress else { throw ChannelError.unknownLocalAddress }
        return HTTPServer(
            localAddress: address, channel: channel, quiesce: quiesce, handler: handler, maxBodyBytes: maxBodyBytes,
            logger: logger)
    }

    private init(
        localAddress: SocketAddress, channel: NIOAsyncChannel<Connection, Never>, quiesce: ServerQuiescingHelper,
        handler: any HTTPHandler, maxBodyBytes: @escaping @Sendable (String) -> Int, logger: Logger
    ) {
        self.localAddress = localAddress
        self.channel = channel
        self.quiesce = quiesce
        self.handler = handler
        self.maxBodyBytes = maxBodyBytes
        self.logger = logger
    }

    public var port: Int { localAddress.port ?? 0 }

    /// Accepts and serves connections until `shutdown()` has closed the listener and every
    /// connection has finished.
    public func serve() async {
        await withDiscardingTaskGroup { group in
            do {
                try await channel.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { await self.serve(connection) }
                    }
                }
            } catch {
                logger.error("Listener failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Stops accepting, finishes requests in progress and closes idle connections; returns when
    /// all are closed.
    public func shutdown() async {
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        quiesce.initiateShutdown(promise: promise)
        try? await promise.futureResult.get()
    }

    private func serve(_ connection: Connection) async {
        let channel = connection.channel
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                var body = ByteBuffer()
                var drained: Int?
                var limit = 0
                for try await part in inbound {
                    if let count = drained {
                        // After a 413: read and discard what the client is still sending, so that closing
                        // does not reset the connection before it has read the answer.
                        switch part {
                        case .body(let chunk) where count + chunk.readableBytes <= 4 * limit:
                            drained = count + chunk.readableBytes
                            continue
                        default:
                            return
                        }
                    }
                    switch part {
                    case .head(let requestHead):
                        head = requestHead
                        body.clear()
                        let path = requestHead.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? requestHead.uri
                        limit = maxBodyBytes(path)
                        if let length = requestHead.headers.first(name: "content-length").flatMap(Int.init), length > limit {
                            drained = try await refuse(limit: limit, version: requestHead.version, outbound: outbound, channel: channel)
                        }
                    case .body(var chunk):
                        guard body.readableBytes + chunk.readableBytes <= limit else {
                            drained = try await refuse(
                                limit: limit, version: head?.version ?? .http1_1, outbound: outbound, channel: channel)
                            continue
                        }
                        body.writeBuffer(&chunk)
                    case .end:
                        guard let requestHead = head else { return }
                        let request = HTTPRequest(
                            method: requestHead.method, uri: requestHead.uri, headers: requestHead.headers, body: body)
                        let response = await handler.handle(request)
                        let keepAlive = requestHead.isKeepAlive
                        try await write(response, version: requestHead.version, keepAlive: keepAlive, to: outbound)
                        head = nil
                        body = ByteBuffer()
                        if !keepAlive { return }
                    }
                }
            }
        } catch {
            logger.debug("Connection ended with an error", metadata: ["error": "\(error)"])
        }
    }

    /// Answers 413, half-closes, and gives the client five seconds (as nginx lingers) to stop
    /// sending before closing.
    private func refuse(
        limit: Int, version: HTTPVersion, outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, channel: any Channel
    ) async throws -> Int {
        let tooLarge = HTTPResponse.matrixError(.payloadTooLarge, "M_TOO_LARGE", "Request body exceeds \(limit) bytes")
        try await write(tooLarge, version: version, keepAlive: false, to: outbound)
        outbound.finish()
        channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
        return 0
    }

    private func write(
        _ response: HTTPResponse, version: HTTPVersion, keepAlive: Bool,
        to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = response.headers
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.readableBytes))
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: version, status: response.status, headers: headers)
        if response.body.readableBytes > 0 {
            try await outbound.write(contentsOf: [.head(head), .body(.byteBuffer(response.body)), .end(nil)])
        } else {
            try await outbound.write(contentsOf: [.head(head), .end(nil)])
        }
    }
}

/// Closes a connection that has been idle for the read timeout.
private final class IdleCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
