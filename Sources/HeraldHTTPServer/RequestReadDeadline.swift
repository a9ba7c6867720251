import HeraldCore
import NIOCore
import NIOHTTP1

/// The raw bytes of a connection, below the HTTP decoder (which says nothing until a head is
/// complete): it starts a request's read deadline at its first byte and answers 408 and closes when
/// the request is not complete in time, and it keeps the socket's read interest while a response
/// is being made (docs/architecture.md, "Reading a connection").
///
/// The deadline costs no timer per request (`LoopTimer`): a request notes when it must be complete,
/// and the connection's one timer looks at that note when it fires and is armed again for the
/// request then in progress, if any. A connection whose requests keep coming on time sees its timer
/// fire about once per `timeout`; an idle one has none once the timer its last request armed has
/// fired.
///
/// SwiftNIO's `HTTPServerPipelineHandler` withholds reads while a response is pending, so that
/// pipelined requests wait in the socket; without more, the socket's read interest is taken off the
/// poller after each request and put back after each response, two `epoll_ctl` calls a request.
/// This handler reads on while a response is pending, which costs nothing with a client that waits
/// for its answer (nothing arrives): the interest stays. Once bytes arrive while a response is
/// pending (a client pipelining), it leaves the reads to the pipeline handler for the rest of the
/// connection, so a connection takes in at most one read's worth of bytes more than SwiftNIO alone
/// would, once.
final class RequestReadDeadline: ChannelDuplexHandler, RemovableChannelHandler, LoopTimerOwner {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let timeout: TimeAmount
    /// When the request in progress must be complete; nil between requests.
    private var expiry: NIODeadline?
    var timer: LoopTimer
    /// Between a request's last byte and the end of its response: bytes then belong to no request yet.
    private var awaitingRequest = true
    /// Bytes arrived while a response was pending: the client pipelines, and reads are the
    /// pipeline handler's from then on.
    private var pipelining = false

    /// The listener's 408, as the bytes HTTP/1.1 sends (rendered once per listener).
    private let timeoutResponse: ByteBuffer

    /// `clock` runs the deadline (the loop's own, but in tests).
    init(timeout: TimeAmount, answer: ByteBuffer, clock: any LoopClock) {
        timer = LoopTimer(clock: clock)
        self.timeout = timeout
        timeoutResponse = answer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !awaitingRequest {
            pipelining = true
        } else if expiry == nil {
            let expiry = timer.now(context.eventLoop) + timeout
            self.expiry = expiry
            armTimer(by: expiry, context: context)
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
        // Ahead of the channel's own read after this event, which the pipeline handler withholds.
        if !awaitingRequest && !pipelining { context.read() }
    }

    /// The request is complete: no deadline until the next one starts.
    func requestComplete() {
        expiry = nil
        awaitingRequest = false
    }

    /// The response is written: the next bytes start a new request.
    func responseComplete() { awaitingRequest = true }

    func channelInactive(context: ChannelHandlerContext) {
        timer.cancel()
        context.fireChannelInactive()
    }

    /// Answers 408 and closes when the request under way is past its expiry, or says when it is due.
    func timerFired(context: ChannelHandlerContext) -> NIODeadline? {
        guard let expiry else { return nil }
        guard timer.now(context.eventLoop) >= expiry else { return expiry }
        let channel = context.channel
        context.writeAndFlush(NIOAny(timeoutResponse)).whenComplete { _ in channel.close(promise: nil) }
        return nil
    }
}
