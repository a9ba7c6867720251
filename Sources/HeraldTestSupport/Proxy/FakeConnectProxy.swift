import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// An HTTP CONNECT proxy on loopback (as operators put in front of Herald's outbound traffic):
/// it checks `Proxy-Authorization: Basic` when given credentials, answers 407 otherwise, and
/// tunnels the connection to the target. It records every CONNECT it was asked for.
package final class FakeConnectProxy: Sendable {
    package struct Connect: Sendable, Equatable {
        package let target: String
        package let authorized: Bool

        package init(target: String, authorized: Bool) {
            self.target = target
            self.authorized = authorized
        }
    }

    package let port: Int
    private let channel: any Channel
    private let log: Log

    final class Log: Sendable {
        let connects = Mutex<[Connect]>([])
    }

    package var connects: [Connect] { log.connects.withLock { $0 } }

    package static func start(username: String? = nil, password: String? = nil) async throws -> FakeConnectProxy {
        let expected = username.map { "Basic " + Data("\($0):\(password ?? "")".utf8).base64EncodedString() }
        let log = Log()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(ConnectHandler(expected: expected, log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return FakeConnectProxy(port: channel.localAddress?.port ?? 0, channel: channel, log: log)
    }

    private init(port: Int, channel: any Channel, log: Log) {
        self.port = port
        self.channel = channel
        self.log = log
    }

    package func stop() async { try? await channel.close() }
}

/// Reads the CONNECT request head, then tunnels.
private final class ConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let expected: String?
    let log: FakeConnectProxy.Log
    var buffered = ByteBuffer()
    var tunnelling = false

    init(expected: String?, log: FakeConnectProxy.Log) {
        self.expected = expected
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        buffered.writeBuffer(&chunk)
        guard !tunnelling, let text = buffered.getString(at: buffered.readerIndex, length: buffered.readableBytes),
            let end = text.range(of: "\r\n\r\n")
        else { return }
        tunnelling = true
        let headLength = text.utf8.distance(from: text.startIndex, to: end.upperBound)
        buffered.moveReaderIndex(forwardBy: headLength)
        let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        var authorization: String?
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "proxy-authorization" {
                authorization = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        guard requestLine.count >= 2, requestLine[0] == "CONNECT" else {
            reply(context, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", close: true)
            return
        }
        let target = String(requestLine[1])
        let authorized = expected == nil || authorization == expected
        log.connects.withLock { $0.append(.init(target: target, authorized: authorized)) }
        guard authorized else {
            reply(
                context,
                "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                close: true)
            return
        }
        let hostPort = target.split(separator: ":")
        guard hostPort.count == 2, let port = Int(hostPort[1]) else {
            reply(context, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", close: true)
            return
        }
        let inbound = context.channel
        let leftover = buffered
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { outbound in
                outbound.eventLoop.makeCompletedFuture { try outbound.pipeline.syncOperations.addHandler(Forwarder(peer: inbound)) }
            }
            .connect(host: String(hostPort[0]), port: port)
            .whenComplete { result in
                let context = loopBoundContext.value
                switch result {
                case .failure:
                    handler.value.reply(context, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", close: true)
                case .success(let outbound):
                    handler.value.reply(context, "HTTP/1.1 200 Connection Established\r\n\r\n", close: false)
                    if leftover.readableBytes > 0 { outbound.writeAndFlush(leftover, promise: nil) }
                    let pipeline = context.pipeline
                    _ = pipeline.syncOperations.removeHandler(context: context)
                    try? pipeline.syncOperations.addHandler(Forwarder(peer: outbound))
                }
            }
    }

    func reply(_ context: ChannelHandlerContext, _ text: String, close: Bool) {
        let write = context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)))
        let channel = context.channel
        if close { write.whenComplete { _ in channel.close(promise: nil) } }
    }
}

/// Copies what one side reads to the other, and closes the other when one closes.
private final class Forwarder: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    let peer: any Channel

    init(peer: any Channel) { self.peer = peer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        peer.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        peer.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
