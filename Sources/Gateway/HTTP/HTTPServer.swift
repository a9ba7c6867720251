import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix
import Pushkins
import Tracing

/// An HTTP/1.1 server on SwiftNIO.
///
/// Bodies are read whole up to the handler's limit for the path; a larger one (announced or streamed) is answered
/// 413 at once and the connection closed, so it is never left half-read. `shutdown()` stops
/// accepting, lets requests in progress finish and closes idle keep-alive connections.
public final class HTTPServer: Sendable {
    public typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    public let localAddress: SocketAddress
    private let channel: NIOAsyncChannel<Connection, Never>
    private let quiesce: ServerQuiescingHelper
    private let handler: any HTTPHandler
    private let logger: Logger
    private let accessLog: AccessLog?
    private let limits: InboundLimits
    private let openConnections = AtomicCounter()
    private let pending: PendingConnections
    /// With `SO_REUSEPORT`: how long to keep accepting after steering new connections away.
    private let handover: Duration?

    /// With `reusePort` (the handover period) the port may be shared with the next Herald of a
    /// rolling restart (`ReusePortHandover`).
    public static func bind(
        host: String, port: Int, handler: any HTTPHandler, limits: InboundLimits = InboundLimits(), logger: Logger,
        accessLog: AccessLog? = nil, reusePort: Duration? = nil
    ) async throws -> HTTPServer {
        let idleTimeout = limits.idleTimeout
        let readTimeout = limits.requestReadTimeout
        let firstRequestWait = limits.shutdownFirstRequestWait
        let group = MultiThreadedEventLoopGroup.singleton
        let quiesce = ServerQuiescingHelper(group: group)
        let pending = PendingConnections()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(
                ChannelOptions.Types.SocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_REUSEPORT)),
                value: reusePort == nil ? 0 : 1
            )
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        DescriptorReserve {
                            if let suppressed = LogThrottle.perDevice.admit("Out of file descriptors") {
                                logger.warning(
                                    "Out of file descriptors: a connection was closed unanswered",
                                    metadata: ["similar_lines_suppressed": "\(suppressed)"])
                            }
                        })
                    try channel.pipeline.syncOperations.addHandler(quiesce.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .bind(host: host, port: port) { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: idleTimeout))
                    try child.pipeline.syncOperations.addHandler(IdleCloser())
                    let deadline = RequestReadDeadline(timeout: readTimeout)
                    try child.pipeline.syncOperations.addHandler(deadline)
                    try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: false)
                    let pipelineHandler = try child.pipeline.syncOperations.handler(type: HTTPServerPipelineHandler.self)
                    try child.pipeline.syncOperations.addHandler(
                        FirstRequestGrace(wait: firstRequestWait), position: .before(pipelineHandler))
                    try child.pipeline.syncOperations.addHandler(MalformedRequestResponder())
                    try child.pipeline.syncOperations.addHandler(RequestReadMarker(deadline: deadline))
                    let connection = try pending.make(for: child) {
                        try Connection(wrappingChannelSynchronously: $0, configuration: .init(isOutboundHalfClosureEnabled: true))
                    }
                    guard let connection else { throw PendingConnections.Closed() }
                    return connection
                }
            }
        guard let address = channel.channel.localAddress else { throw ChannelError.unknownLocalAddress }
        return HTTPServer(
            localAddress: address, channel: channel, quiesce: quiesce, pending: pending, handler: handler, logger: logger,
            accessLog: accessLog, limits: limits, handover: reusePort)
    }

    private init(
        localAddress: SocketAddress, channel: NIOAsyncChannel<Connection, Never>, quiesce: ServerQuiescingHelper,
        pending: PendingConnections, handler: any HTTPHandler, logger: Logger, accessLog: AccessLog?, limits: InboundLimits,
        handover: Duration?
    ) {
        self.pending = pending
        self.handover = handover
        self.accessLog = accessLog
        self.limits = limits
        self.localAddress = localAddress
        self.channel = channel
        self.quiesce = quiesce
        self.handler = handler
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
                        pending.taken(connection)
                        guard openConnections.add(1) <= limits.maxConnections else {
                            openConnections.add(-1)
                            group.addTask { await self.turnAway(connection) }
                            continue
                        }
                        group.addTask(executorPreference: EventLoopTaskExecutor(connection.channel.eventLoop)) {
                            await self.serve(connection)
                            self.openConnections.add(-1)
                        }
                    }
                }
            } catch {
                logger.error("Listener failed", metadata: ["error": "\(error)"])
            }
            for connection in pending.closeAll() {
                group.addTask { try? await connection.executeThenClose { _, outbound in outbound.finish() } }
            }
        }
    }

    /// Stops accepting, finishes requests in progress and closes idle connections; returns when
    /// all are closed.
    public func shutdown() async {
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        drain(promise: promise)
        try? await promise.futureResult.get()
    }

    /// Starts the same drain without waiting; `serve()` returns when it is done. A listener
    /// sharing its port first hands new connections over to its successor and empties its own
    /// accept queue (`ReusePortHandover`).
    public func initiateShutdown() {
        drain(promise: nil)
    }

    private func drain(promise: EventLoopPromise<Void>?) {
        guard let handover else {
            quiesce.initiateShutdown(promise: promise)
            return
        }
        let server = channel.channel
        let quiesce = self.quiesce
        ReusePortHandover.steerToSuccessor(server).whenComplete { result in
            if case .failure(let error) = result {
                self.logger.warning("Could not hand the port over; closing the listener", metadata: ["error": "\(error)"])
            }
            server.eventLoop.scheduleTask(in: .nanoseconds(handover.nanoseconds)) { quiesce.initiateShutdown(promise: promise) }
        }
    }

    private func serve(_ connection: Connection) async {
        let channel = connection.channel
        do {
            try await connection.executeThenClose { inbound, outbound in
                var machine = ConnectionStateMachine()
                machine.minimumDiscard = limits.maxDiscardedBodyBytes
                var held = 0  // body bytes of the request in progress taken from the budget
                defer { limits.bodyBudget?.release(held) }
                var policy = handler.policy(forPath: "/")
                for try await part in inbound {
                    let action: ConnectionStateMachine.Action
                    switch part {
                    case .head(let head):
                        policy = handler.policy(forPath: Self.path(of: head.uri))
                        action = machine.head(head, limit: policy.maxBodyBytes)
                    case .body(let chunk):
                        if let budget = limits.bodyBudget, case .receiving = machine.state {
                            guard budget.take(chunk.readableBytes) else {
                                try await turnAway(outbound: outbound, version: .http1_1, dialect: policy.dialect, channel: channel)
                                return
                            }
                            held += chunk.readableBytes
                        }
                        action = machine.body(chunk)
                    case .end:
                        action = machine.end()
                    }
                    switch action {
                    case .none:
                        continue
                    case .sendContinue(let version):
                        try await outbound.write(.head(HTTPResponseHead(version: version, status: .continue)))
                    case .close:
                        return
                    case .refuse(let limit, let version):
                        try await refuse(limit: limit, dialect: policy.dialect, version: version, outbound: outbound, channel: channel)
                    case .dispatch(let head, let body):
                        let request = ServerRequest(method: head.method, uri: head.uri, headers: head.headers, body: body)
                        let started = ContinuousClock.now
                        var response = await RequestContext.$requestId.withValue(request.requestId) {
                            await self.traced(request)
                        }
                        limits.bodyBudget?.release(held)
                        held = 0
                        response.headers.replaceOrAdd(name: "X-Request-Id", value: request.requestId)
                        try await write(response, version: head.version, keepAlive: head.isKeepAlive, to: outbound)
                        accessLog?.record(
                            request, status: response.status, responseBytes: response.body.readableBytes,
                            duration: ContinuousClock.now - started)
                        if machine.responded(keepAlive: head.isKeepAlive) == .close { return }
                    }
                }
            }
        } catch {
            logger.debug("Connection ended with an error", metadata: ["error": "\(error)"])
        }
    }

    /// Handles `request` inside a server span (a no-op unless tracing is enabled).
    private func traced(_ request: ServerRequest) async -> ServerResponse {
        let route = handler.routeName(forPath: request.path)
        return await withSpan("\(request.method.rawValue) \(route ?? "(unmatched)")", ofKind: .server) { span in
            // Attributes only for a span that records: the no-op span would build and drop a dictionary for each.
            let recording = span.isRecording
            if recording {
                span.attributes["http.request.method"] = request.method.rawValue
                if let route { span.attributes["http.route"] = route }
                span.attributes["herald.request_id"] = request.requestId
            }
            let response = await handler.handle(request)
            if recording { span.attributes["http.response.status_code"] = Int(response.status.code) }
            if response.status.code >= 500 { span.setStatus(.init(code: .error)) }
            return response
        }
    }

    /// More connections than `max_connections`: 503 with `Retry-After`, then close.
    private func turnAway(_ connection: Connection) async {
        try? await connection.executeThenClose { inbound, outbound in
            // Answer the first request (HTTP allows no response before one), then close.
            for try await part in inbound {
                guard case .head(let head) = part else { continue }
                try await turnAway(outbound: outbound, version: head.version, dialect: .matrix, channel: connection.channel)
                return
            }
        }
    }

    private func turnAway(
        outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, version: HTTPVersion, dialect: ErrorDialect, channel: any Channel
    ) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Retry-After", value: "1")
        let busy = ErrorResponder.response(
            for: GatewayError(.serviceUnavailable, "M_LIMIT_EXCEEDED", "The server is busy; retry shortly", headers: headers),
            dialect: dialect)
        try await write(busy, version: version, keepAlive: false, to: outbound)
        outbound.finish()
    }

    static func path(of uri: String) -> String {
        uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
    }

    /// Answers 413, half-closes, and gives the client five seconds (as nginx lingers) to stop
    /// sending before closing.
    private func refuse(
        limit: Int, dialect: ErrorDialect, version: HTTPVersion, outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>,
        channel: any Channel
    ) async throws {
        let tooLarge = ErrorResponder.response(for: GatewayError.tooLarge(limit: limit), dialect: dialect)
        try await write(tooLarge, version: version, keepAlive: false, to: outbound)
        outbound.finish()
        channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
    }

    private func write(
        _ response: ServerResponse, version: HTTPVersion, keepAlive: Bool,
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

/// Answers a request the HTTP parser cannot read with a 400 in Matrix JSON (instead of an empty
/// body), then closes; when a response is already being written, it only closes.
private final class MalformedRequestResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var responding = false

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        guard !responding else {
            context.close(promise: nil)
            return
        }
        let response = ErrorResponder.response(
            for: GatewayError(.badRequest, "M_UNRECOGNIZED", "Malformed HTTP request"), dialect: .matrix)
        var headers = response.headers
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.readableBytes))
        headers.replaceOrAdd(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(response.body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200: responding = true
        case .end: responding = false
        default: break
        }
        context.write(data, promise: promise)
    }
}
