import FoundationEssentials
import HeraldCore
import NIOCore

/// Opens a tunnel through an HTTP CONNECT proxy on a freshly connected channel: it sends
/// `CONNECT target`, reads the proxy's answer head, and on a 2xx removes itself and succeeds
/// `promise`, leaving the channel to the TLS handshake with the target. Any other answer, an
/// answer head over 16 KiB, or a close fails it.
final class ConnectTunnel: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let maxAnswerBytes = 16 * 1024

    private let target: String
    private let authorization: String?
    private let promise: EventLoopPromise<Void>
    private var answer = ByteBuffer()

    init(target: String, proxy: ProxySettings, promise: EventLoopPromise<Void>) {
        self.target = target
        if let user = proxy.username, let password = proxy.password {
            authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        } else {
            authorization = nil
        }
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        request += "\r\n"
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        answer.writeBuffer(&chunk)
        let bytes = answer.readableBytesView
        guard let end = bytes.firstRange(of: [13, 10, 13, 10]) else {
            if answer.readableBytes > Self.maxAnswerBytes { refuse(nil, context: context) }
            return
        }
        // "HTTP/1.1 200 Connection established"
        let statusLine = bytes[bytes.startIndex..<end.lowerBound].split(separator: 13, maxSplits: 1).first ?? []
        let fields = statusLine.split(separator: UInt8(ascii: " "), maxSplits: 2)
        let status = fields.count >= 2 ? Int(String(decoding: fields[1], as: UTF8.self)) : nil
        guard let status, (200..<300).contains(status) else {
            refuse(status, context: context)
            return
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        promise.succeed()
    }

    private func refuse(_ status: Int?, context: ChannelHandlerContext) {
        promise.fail(UpstreamConnectionError.proxyRefused(status))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(UpstreamConnectionError.proxyRefused(nil))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }
}
