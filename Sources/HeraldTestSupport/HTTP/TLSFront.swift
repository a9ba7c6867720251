package import HeraldHTTPServer
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// HTTPS in front of a fake (any `HTTPHandler`: the fake FCM, HMS, push service, UnifiedPush
/// distributor), speaking what a real provider's front end speaks: HTTP/2 and HTTP/1.1 offered by
/// ALPN, or only one of them. Each request reaches the fake whole, as it would on the fake's own
/// plain-HTTP listener, so every check and script of the fake holds over both protocols.
///
/// Over HTTP/2 it announces `maxConcurrentStreams`, and can be told to misbehave as servers do:
/// reset the next streams before the fake sees them, or send GOAWAY. It counts what tests
/// assert: connections by protocol, requests the fake answered, and the most in flight at once.
package final class TLSFront: Sendable {
    /// What the front offers by ALPN.
    package enum Offer: Sendable {
        case http2AndHTTP1
        case http1Only
        case http2Only

        var protocols: [String] {
            switch self {
            case .http2AndHTTP1: ["h2", "http/1.1"]
            case .http1Only: ["http/1.1"]
            case .http2Only: ["h2"]
            }
        }
    }

    struct State {
        var http2Connections = 0
        var http1Connections = 0
        var answered = 0
        var inFlight = 0
        var maxInFlight = 0
        var resets = 0
        var resetsToDo = 0
        var goAwayAfter: Int?
    }

    final class Shared: Sendable {
        let state = Mutex(State())
        let handler: any HTTPHandler
        init(handler: any HTTPHandler) { self.handler = handler }
    }

    package let port: Int
    private let channel: any Channel
    private let shared: Shared

    /// Listens on 127.0.0.1 with a certificate for `localhost` from `pki`.
    package static func start(
        pki: TestPKI, handler: any HTTPHandler, offer: Offer = .http2AndHTTP1, maxConcurrentStreams: Int = 100
    ) async throws -> TLSFront {
        let (certificateFile, keyFile) = try pki.issueServerCertificate(name: "front")
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem)))
        tls.applicationProtocols = offer.protocols
        let context = try NIOSSLContext(configuration: tls)
        let shared = Shared(handler: handler)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    child.configureHTTP2SecureUpgrade { connection in
                        shared.state.withLock { $0.http2Connections += 1 }
                        return connection.configureHTTP2Pipeline(
                            mode: .server,
                            initialLocalSettings: [HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]
                        ) { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandlers([
                                    HTTP2FramePayloadToHTTP1ServerCodec(), Exchange(shared: shared, http2: true),
                                ])
                            }
                        }.map { _ in () }
                    } http1ChannelConfigurator: { connection in
                        shared.state.withLock { $0.http1Connections += 1 }
                        return connection.eventLoop.makeCompletedFuture {
                            try connection.pipeline.syncOperations.configureHTTPServerPipeline()
                            try connection.pipeline.syncOperations.addHandler(Exchange(shared: shared, http2: false))
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TLSFront(port: channel.localAddress?.port ?? 0, channel: channel, shared: shared)
    }

    private init(port: Int, channel: any Channel, shared: Shared) {
        self.port = port
        self.channel = channel
        self.shared = shared
    }

    package var baseURL: String { "https://localhost:\(port)" }
    /// `url` (one of the fake's own, `http://127.0.0.1:<port>/…`) on this front instead.
    package func rebase(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://"),
            let pathStart = url[schemeEnd.upperBound...].firstIndex(where: { $0 == "/" })
        else { return baseURL }
        return baseURL + url[pathStart...]
    }

    package var http2Connections: Int { shared.state.withLock { $0.http2Connections } }
    package var http1Connections: Int { shared.state.withLock { $0.http1Connections } }
    /// Requests the fake answered.
    package var answered: Int { shared.state.withLock { $0.answered } }
    /// The most requests the fake had in progress at once.
    package var maxInFlight: Int { shared.state.withLock { $0.maxInFlight } }
    /// Streams reset so far (`resetNextStreams`).
    package var resets: Int { shared.state.withLock { $0.resets } }

    /// The next `count` requests' streams are reset (RST_STREAM) before the fake sees them; over
    /// HTTP/1.1 their connection is closed instead.
    package func resetNextStreams(_ count: Int) { shared.state.withLock { $0.resetsToDo += count } }
    /// Once `answers` more requests have been answered, the connection of the last sends GOAWAY
    /// (last stream id: that request's) and closes.
    package func goAway(afterAnswers answers: Int) {
        shared.state.withLock { $0.goAwayAfter = $0.answered + answers }
    }

    package func stop() async { try? await channel.close() }

    /// One request, HTTP/2 stream or HTTP/1.1 exchange, seen as NIO's HTTP/1 parts.
    private final class Exchange: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let shared: Shared
        let http2: Bool
        var head: HTTPRequestHead?
        var body = ByteBuffer()

        init(shared: Shared, http2: Bool) {
            self.shared = shared
            self.http2 = http2
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body.clear()
            case .body(var chunk):
                body.writeBuffer(&chunk)
            case .end:
                guard let head else { return }
                let reset = shared.state.withLock { state -> Bool in
                    guard state.resetsToDo > 0 else {
                        state.inFlight += 1
                        state.maxInFlight = max(state.maxInFlight, state.inFlight)
                        return false
                    }
                    state.resetsToDo -= 1
                    state.resets += 1
                    return true
                }
                if reset {
                    context.close(promise: nil)  // a stream closed open sends RST_STREAM
                    return
                }
                var made = ServerRequest(method: head.method, uri: head.uri, headers: head.headers, body: body)
                made.peer = context.channel.parent?.remoteAddress ?? context.channel.remoteAddress
                let request = made
                let handler = shared.handler
                let promise = context.eventLoop.makePromise(of: ServerResponse.self)
                promise.completeWithTask { await handler.handle(request) }
                let bound = NIOLoopBound((context, self), eventLoop: context.eventLoop)
                promise.futureResult.whenSuccess { response in
                    let (context, exchange) = bound.value
                    exchange.answer(response, keepAlive: head.isKeepAlive, context: context)
                }
            }
        }

        private func answer(_ response: ServerResponse, keepAlive: Bool, context: ChannelHandlerContext) {
            let goAway = shared.state.withLock { state -> Bool in
                state.inFlight -= 1
                state.answered += 1
                guard let after = state.goAwayAfter, state.answered >= after else { return false }
                state.goAwayAfter = nil
                return true
            }
            // GOAWAY goes first, naming this stream as the last the server takes: the client
            // knows the connection is going before it sees this answer.
            if goAway, http2, let connection = context.channel.parent {
                let last = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? .rootStream
                let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: .noError, opaqueData: nil))
                connection.writeAndFlush(frame, promise: nil)
            }
            var headers = response.headers
            headers.replaceOrAdd(name: "content-length", value: String(response.body.readableBytes))
            let version: HTTPVersion = http2 ? .http2 : .http1_1
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: version, status: response.status, headers: headers))), promise: nil)
            if response.body.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(response.body))), promise: nil) }
            let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            let connection = context.channel.parent ?? context.channel
            if goAway || (!http2 && !keepAlive) { written.whenComplete { _ in connection.close(promise: nil) } }
        }
    }
}
