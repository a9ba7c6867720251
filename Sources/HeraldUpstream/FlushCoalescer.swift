import NIOCore

/// Turns the flushes of one event-loop tick into one.
///
/// `HTTP2Streams` flushes the connection for every request it writes, so each request on a busy
/// connection would be its own `write` system call. Placed between TLS and HTTP/2, this handler
/// lets the first flush of a tick schedule a single flush after the tasks already queued on the
/// loop (the other requests waiting to be written) and ignores the rest until it has run. TLS
/// still makes a record of each buffer written (a frame, a DATA frame's header, its payload); the
/// records of a tick leave in one write. Nothing is held back longer than that tick; see
/// docs/architecture.md, "The upstream-call path".
final class FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny

    private var scheduled = false

    func flush(context: ChannelHandlerContext) {
        guard !scheduled else { return }
        scheduled = true
        context.eventLoop.assumeIsolated().execute {
            self.scheduled = false
            context.flush()
        }
    }
}
