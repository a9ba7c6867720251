package import HeraldCore
package import Logging
package import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix
import Tracing

/// An HTTP/1.1 server on SwiftNIO.
///
/// Bodies are read whole up to the handler's limit for the path; a larger one (announced or streamed) is answered
/// 413 at once and the connection closed, so it is never left half-read. `shutdown()` stops
/// accepting, lets requests in progress finish and closes idle keep-alive connections.
package final class HTTPServer: Sendable {
    package let localAddress: SocketAddress
    private let channel: NIOAsyncChannel<ServerConnection, Never>
    private let quiesce: ServerQuiescingHelper
    private let handler: any HTTPHandler
    private let logger: Logger
    private let accessLog: AccessLog?
    private let limits: InboundLimits
    private let openConnections = AtomicCounter()
    private let pending: PendingConnections
    /// With `SO_REUSEPORT`: how long to keep accepting after steering new connections away.
    private let handover: Duration?
    /// What the access log's durations are measured on (docs/architecture.md, "Time"); the
    /// connections' own timeouts are timers of their event loops.
    private let clock: any HeraldClock

    /// The loops every server's connections live on.
    private static var loops: MultiThreadedEventLoopGroup { .singleton }

    /// With `reusePort` (the handover period) the port may be shared with the next Herald of a
    /// rolling restart (`ReusePortHandover`).
    package static func bind(
        host: String, port: Int, handler: any HTTPHandler, limits: InboundLimits = InboundLimits(), logger: Logger,
        accessLog: AccessLog? = nil, reusePort: Duration? = nil, clock: any HeraldClock
    ) async throws -> HTTPServer {
        let idleTimeout = limits.idleTimeout
        let readTimeout = limits.requestReadTimeout
        let firstRequestWait = limits.shutdownFirstRequestWait
        let router = handler
        // The answer and read deadlines run on the clock's time (a test's moves them).
        let loopClock = clock.loopClock
        // The listener's own answers, rendered once.
        let timeoutAnswer = ResponseWriter.encoded(handler.connectionErrors.render(ServerError.requestTimeout))
        let malformedAnswer = handler.connectionErrors.render(ServerError.malformed)
        let group = Self.loops
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
                    let deadline = RequestReadDeadline(timeout: readTimeout, answer: timeoutAnswer, clock: loopClock)
                    try child.pipeline.syncOperations.addHandler(deadline)
                    // Every response head is written by `ResponseWriter`, which checks its fields and
                    // writes its framing.
                    try child.pipeline.syncOperations.configureHTTPServerPipeline(
                        withErrorHandling: false, withOutboundHeaderValidation: false,
                        withEncoderConfiguration: ResponseWriter.encoderConfiguration)
                    let pipelineHandler = try child.pipeline.syncOperations.handler(type: HTTPServerPipelineHandler.self)
                    try child.pipeline.syncOperations.addHandler(
                        FirstRequestGrace(wait: firstRequestWait), position: .before(pipelineHandler))
                    try child.pipeline.syncOperations.addHandler(MalformedRequestResponder(answer: malformedAnswer))
                    let handler = ConnectionHandler(router: router, limits: limits, deadline: deadline, clock: loopClock)
                    try child.pipeline.syncOperations.addHandler(handler)
                    let connection = pending.make(for: child) { ServerConnection(channel: child, handler: handler) }
                    guard let connection else { throw PendingConnections.Closed() }
                    return connection
                }
            }
        guard let address = channel.channel.localAddress else { throw ChannelError.unknownLocalAddress }
        return HTTPServer(
            localAddress: address, channel: channel, quiesce: quiesce, pending: pending, handler: handler, logger: logger,
            accessLog: accessLog, limits: limits, handover: reusePort, clock: clock)
    }

    private init(
        localAddress: SocketAddress, channel: NIOAsyncChannel<ServerConnection, Never>, quiesce: ServerQuiescingHelper,
        pending: PendingConnections, handler: any HTTPHandler, logger: Logger, accessLog: AccessLog?, limits: InboundLimits,
        handover: Duration?, clock: any HeraldClock
    ) {
        self.clock = clock
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

    package var port: Int { localAddress.port ?? 0 }

    /// The connections it serves now.
    package var openConnectionCount: Int { openConnections.current }

    /// Whether its listener still accepts connections (false once a shutdown closed it).
    package var isAccepting: Bool { channel.channel.isActive }

    /// Accepts and serves connections until `shutdown()` has closed the listener and every
    /// connection has finished, with the work behind their answers.
    package func serve() async {
        await withDiscardingTaskGroup { group in
            do {
                try await channel.executeThenClose { inbound in
                    for try await connection in inbound {
                        pending.taken(connection)
                        guard openConnections.add(1) <= limits.maxConnections else {
                            openConnections.add(-1)
                            connection.turnAway()
                            continue
                        }
                        group.addTask(executorPreference: EventLoopTaskExecutor(connection.channel.eventLoop)) {
                            await self.serve(connection)
                            self.openConnections.add(-1)
                        }
                    }
                }
            } catch is CancellationError {
                // The server's task was cancelled: its connections' tasks close them.
            } catch {
                logger.error("Listener failed", metadata: ["error": "\(error)"])
            }
            for connection in pending.closeAll() { connection.channel.close(promise: nil) }
        }
    }

    /// Stops accepting, finishes requests in progress and closes idle connections; returns when
    /// all are closed.
    package func shutdown() async {
        let promise = Self.loops.next().makePromise(of: Void.self)
        drain(promise: promise)
        try? await promise.futureResult.get()
    }

    /// Starts the same drain without waiting; `serve()` returns when it is done. A listener
    /// sharing its port first hands new connections over to its successor and empties its own
    /// accept queue (`ReusePortHandover`).
    package func initiateShutdown() {
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
            server.eventLoop.scheduleTask(in: TimeAmount(handover)) { quiesce.initiateShutdown(promise: promise) }
        }
    }

    /// Serves `connection`'s requests in order. What a handler's work after its answer hands on
    /// (`ServerResponse.afterAnswer`'s `Landing`) lands beside the next request: that request's
    /// answer is written, then waits for it before its own work after the answer starts; the
    /// connection's task ends once the last has landed.
    private func serve(_ connection: ServerConnection) async {
        // What the last answer's work handed on.
        var previous = Landing.landed
        let peer = connection.channel.remoteAddress
        // The peer's source, made once for the connection; a trusted proxy's requests each name
        // their own (`RequestSource.of`).
        let peerSource = peer.flatMap(RequestSource.init(peer:))
        let forwarded = !limits.trustedProxies.isEmpty && peer.map { p in limits.trustedProxies.contains { $0.contains(p) } } == true
        while let read = await connection.nextRequest() {
            var request = ServerRequest(method: read.head.method, uri: read.head.uri, headers: read.head.headers, body: read.body)
            request.peer = peer
            request.source =
                forwarded
                ? RequestSource.of(
                    peer: peer, forwardedFor: read.head.headers.first(name: "X-Forwarded-For"), trusted: limits.trustedProxies)
                : peerSource
            let started = clock.now
            if let deadline = read.route.policy.answerDeadline {
                connection.answer(by: deadline, to: read.head, requestId: request.requestId)
            }
            let current = RequestContext.Current(requestId: request.requestId, source: request.source)
            var response = await RequestContext.$current.withValue(current) {
                await self.traced(request, read.route)
            }
            response.headers.replaceOrAdd(name: "X-Request-Id", value: request.requestId)
            // What the handler left for after its answer, and whether that answer goes out on an
            // open connection (the deadline did not answer first).
            let afterAnswer = response.afterAnswer
            let written = afterAnswer == nil ? false : await connection.claimAnswer()
            // What the access log keeps is taken first: the answer itself is handed on, so that
            // the head is made from its fields without a copy of them.
            let logged = accessLog == nil ? nil : LoggedAnswer(response)
            let responded = await connection.respond(consume response, to: read.head)
            await previous.wait()
            previous = .landed
            switch responded {
            case .open:
                record(request, logged, duration: clock.now - started)
                if let afterAnswer { previous = afterAnswer(written) }
                await connection.writable()
            case .closing:
                record(request, logged, duration: clock.now - started)
                await afterAnswer?(written).wait()
                await connection.closed()
                return
            case .answeredAtDeadline(let early):
                // What the sender saw, when it saw it.
                record(request, LoggedAnswer(early), duration: read.route.policy.answerDeadline?.within ?? clock.now - started)
                await afterAnswer?(false).wait()
                await connection.closed()
                return
            }
        }
        await previous.wait()
        await connection.closed()
    }

    /// What the access log records of an answer.
    private struct LoggedAnswer {
        let status: HTTPResponseStatus
        let bytes: Int
        let repeats: String?

        init(_ response: ServerResponse) {
            status = response.status
            bytes = response.body.readableBytes
            repeats = response.headers.first(name: "Herald-Repeats")
        }
    }

    private func record(_ request: ServerRequest, _ answer: LoggedAnswer?, duration: Duration) {
        guard let answer else { return }
        accessLog?.record(request, status: answer.status, responseBytes: answer.bytes, duration: duration, repeats: answer.repeats)
    }

    /// Handles `request` inside a server span when tracing is enabled.
    private func traced(_ request: ServerRequest, _ resolved: ResolvedRoute) async -> ServerResponse {
        guard Spans.enabled else { return await resolved.respond(to: request) }
        let route = resolved.name
        return await withSpan("\(request.method.rawValue) \(route ?? "(unmatched)")", ofKind: .server) { span in
            // Attributes only for a span that records: the no-op span would build and drop a dictionary for each.
            let recording = span.isRecording
            if recording {
                span.attributes["http.request.method"] = request.method.rawValue
                if let route { span.attributes["http.route"] = route }
                span.attributes["herald.request_id"] = request.requestId
            }
            let response = await resolved.respond(to: request)
            if recording { span.attributes["http.response.status_code"] = Int(response.status.code) }
            if response.status.code >= 500 { span.setStatus(.init(code: .error)) }
            return response
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

/// Answers a request the HTTP parser cannot read with the listener's 400 (instead of
/// an empty body), then closes; when a response is already being written, it only closes.
private final class MalformedRequestResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var responding = false
    private let answer: ServerResponse

    init(answer: ServerResponse) { self.answer = answer }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        guard !responding else {
            context.close(promise: nil)
            return
        }
        let channel = context.channel
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        ResponseWriter.write(answer, version: .http1_1, keepAlive: false, context: context, promise: written, wrap: wrapOutboundOut)
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
