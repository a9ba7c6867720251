package import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A plain HTTP/1.1 upstream on loopback for transport tests: it answers every request 200 with
/// the request's path and body (`POST /a` with `xy` → `/a xy`), after `delay`, keeping the
/// connection open unless told to close it. It counts connections and the most requests it had
/// in flight at once. With a `TestPKI` it serves HTTPS (ALPN `http/1.1` only) as `localhost`.
package final class EchoHTTP1Server: Sendable {
    package struct Options: Sendable {
        package var delay: TimeAmount = .zero
        package var closeAfterEachAnswer = false
        /// Answers wait until this many requests are in flight at once (at most `holdLimit`),
        /// then go out after `delay`: a test of a pool's concurrency that does not depend on timing.
        package var holdAnswersUntilInFlight = 0
        package init() {}
    }

    struct State {
        var options = Options()
        var connections = 0
        var inFlight = 0
        var maxInFlight = 0
        var requests = 0
        var held: [@Sendable () -> Void] = []
        var holding = true
    }

    /// How long answers are held at most for `holdAnswersUntilInFlight`.
    static let holdLimit: TimeAmount = .seconds(10)

    package let port: Int
    private let channel: any Channel

    final class Shared: Sendable {
        let state = Mutex(State())
    }

    package static func start(tls pki: TestPKI? = nil) async throws -> EchoHTTP1Server {
        let shared = Shared()
        let context = try pki.map { pki -> NIOSSLContext in
            let (certificateFile, keyFile) = try pki.issueServerCertificate(name: "echo")
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem)))
            tls.applicationProtocols = ["http/1.1"]
            return try NIOSSLContext(configuration: tls)
        }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                shared.state.withLock { $0.connections += 1 }
                return child.eventLoop.makeCompletedFuture {
                    if let context { try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context)) }
                    try child.pipeline.syncOperations.configureHTTPServerPipeline()
                    try child.pipeline.syncOperations.addHandler(Echo(shared: shared))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return EchoHTTP1Server(port: channel.localAddress?.port ?? 0, channel: channel, shared: shared, secure: pki != nil)
    }

    private let shared: Shared

    private let secure: Bool

    private init(port: Int, channel: any Channel, shared: Shared, secure: Bool) {
        self.secure = secure
        self.port = port
        self.channel = channel
        self.shared = shared
    }

    package var baseURL: String { secure ? "https://localhost:\(port)" : "http://127.0.0.1:\(port)" }
    package func set(_ options: Options) { shared.state.withLock { $0.options = options } }
    package var connections: Int { shared.state.withLock { $0.connections } }
    package var maxInFlight: Int { shared.state.withLock { $0.maxInFlight } }
    package var requests: Int { shared.state.withLock { $0.requests } }

    package func stop() async { try? await channel.close() }

    private final class Echo: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let shared: Shared
        var path = ""
        var body = ByteBuffer()

        init(shared: Shared) { self.shared = shared }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                path = head.uri
                body.clear()
            case .body(var chunk):
                body.writeBuffer(&chunk)
            case .end:
                let answer = ByteBuffer(string: "\(path) \(String(buffer: body))")
                let channel = context.channel
                let shared = self.shared
                let options = shared.state.withLock { $0.options }
                let reply: @Sendable () -> Void = {
                    channel.eventLoop.scheduleTask(in: options.delay) {
                        shared.state.withLock { $0.inFlight -= 1 }
                        var headers = HTTPHeaders()
                        headers.add(name: "Content-Length", value: String(answer.readableBytes))
                        if options.closeAfterEachAnswer { headers.add(name: "Connection", value: "close") }
                        channel.write(
                            HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)),
                            promise: nil)
                        channel.write(HTTPServerResponsePart.body(.byteBuffer(answer)), promise: nil)
                        channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in
                            if options.closeAfterEachAnswer { channel.close(promise: nil) }
                        }
                    }
                }
                let (now, firstHeld) = shared.state.withLock { state -> ([@Sendable () -> Void], Bool) in
                    state.requests += 1
                    state.inFlight += 1
                    state.maxInFlight = max(state.maxInFlight, state.inFlight)
                    guard options.holdAnswersUntilInFlight > 0, state.holding else { return ([reply], false) }
                    state.held.append(reply)
                    guard state.inFlight >= options.holdAnswersUntilInFlight else { return ([], state.held.count == 1) }
                    return (Self.release(&state), false)
                }
                now.forEach { $0() }
                if firstHeld {
                    context.eventLoop.scheduleTask(in: EchoHTTP1Server.holdLimit) {
                        shared.state.withLock { Self.release(&$0) }.forEach { $0() }
                    }
                }
            }
        }

        /// Ends the hold: the held answers, to be sent.
        private static func release(_ state: inout State) -> [@Sendable () -> Void] {
            state.holding = false
            defer { state.held = [] }
            return state.held
        }
    }
}
