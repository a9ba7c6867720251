package import NIOCore
import NIOPosix
import Synchronization

/// A hostile upstream: it answers every request with headers at once, then one body byte every
/// `interval`, for ever (the body it announces never completes). Plain HTTP on loopback.
package final class TrickleServer: Sendable {
    package let port: Int
    private let channel: any Channel
    private let arrivals: Arrivals

    /// How many requests arrived (each is answered with a trickle).
    package var requests: Int { arrivals.count.withLock { $0 } }

    package static func start(interval: TimeAmount = .milliseconds(200)) async throws -> TrickleServer {
        let arrivals = Arrivals()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(Trickler(interval: interval, arrivals: arrivals))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TrickleServer(port: channel.localAddress?.port ?? 0, channel: channel, arrivals: arrivals)
    }

    private init(port: Int, channel: any Channel, arrivals: Arrivals) {
        self.port = port
        self.channel = channel
        self.arrivals = arrivals
    }

    package var baseURL: String { "http://127.0.0.1:\(port)" }

    package func stop() async { try? await channel.close() }
}

private final class Arrivals: Sendable {
    let count = Mutex(0)
}

private final class Trickler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let interval: TimeAmount
    let arrivals: Arrivals
    var started = false

    init(interval: TimeAmount, arrivals: Arrivals) {
        self.interval = interval
        self.arrivals = arrivals
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !started else { return }
        started = true
        arrivals.count.withLock { $0 += 1 }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")), promise: nil)
        let channel = context.channel
        let interval = self.interval
        channel.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { task in
            guard channel.isActive else {
                task.cancel()
                return
            }
            channel.writeAndFlush(ByteBuffer(string: "x"), promise: nil)
        }
    }
}
