import NIOCore
import NIOHTTP1

/// On shutdown SwiftNIO's HTTP pipeline closes every connection with no request in progress at
/// once. That is right for a keep-alive connection idle between requests, but a connection
/// accepted moments ago has a first request on its way, and closing it under that request fails a
/// client that did everything right (a rolling restart then loses a notify: docs/operations.md,
/// "Rolling restart"). Such a connection gets `http.shutdown_first_request_wait` for its request
/// to start; the request is then answered, with `Connection: close`. Sits in front of
/// `HTTPServerPipelineHandler`, which it hands the shutdown to once a request head has passed.
final class FirstRequestGrace: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let wait: TimeAmount
    /// A request head has passed: from now on the pipeline handler knows best.
    private var started = false
    private var held: Scheduled<Void>?

    init(wait: TimeAmount) { self.wait = wait }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !started, case .head = unwrapInboundIn(data) { started = true }
        context.fireChannelRead(data)
        if started, let held {
            // The request is in progress now: the pipeline handler answers it, then closes.
            held.cancel()
            self.held = nil
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent, !started else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        guard held == nil else { return }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        held = context.eventLoop.scheduleTask(in: wait) {
            // No request came: the connection closes as an idle one would have.
            bound.value.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        held?.cancel()
        held = nil
    }
}
