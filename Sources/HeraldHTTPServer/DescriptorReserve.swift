import HeraldCore
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a listener does when the process runs out of file descriptors.
///
/// `accept` then fails with `EMFILE` while the connection stays in the kernel's backlog, so the
/// listening socket stays readable. SwiftNIO's server channel keeps asking for it, and backing off
/// later reads does not stop the loop it is already in: the event loop spins a core. The way out
/// is to accept that connection and close it. The listener keeps one descriptor in reserve (on
/// `/dev/null`): on `EMFILE` it gives it up, accepts the connection with it and closes the
/// connection at once, then takes the reserve back. SwiftNIO's accept back-off then waits a second
/// before accepting again, so a client is refused quickly and the server recovers by itself once
/// descriptors are free. Each refusal is logged (a warning, throttled).
final class DescriptorReserve: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    /// The reserved descriptor, or -1 while it is given up.
    private var reserve: CInt
    private let shed: @Sendable () -> Void

    init(shed: @escaping @Sendable () -> Void) {
        self.reserve = Self.openReserve()
        self.shed = shed
    }

    deinit {
        if reserve >= 0 { close(reserve) }
    }

    private static func openReserve() -> CInt { open("/dev/null", O_RDONLY | O_CLOEXEC) }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let io = error as? IOError, io.errnoCode == EMFILE || io.errnoCode == ENFILE {
            // Give the reserve up (taking it back first if it was lost), so the next accept succeeds.
            if reserve < 0 { reserve = Self.openReserve() }
            if reserve >= 0 {
                close(reserve)
                reserve = -1
            }
        }
        context.fireErrorCaught(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // While the reserve is given up, a connection is served only if the reserve can be taken
        // back beside it; otherwise it used the last descriptor and is closed.
        if reserve < 0 { reserve = Self.openReserve() }
        guard reserve < 0 else {
            context.fireChannelRead(data)
            return
        }
        let child = unwrapInboundIn(data)
        shed()
        child.close(promise: nil)
        child.closeFuture.hop(to: context.eventLoop).assumeIsolatedUnsafeUnchecked().whenComplete { _ in
            if self.reserve < 0 { self.reserve = Self.openReserve() }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if reserve >= 0 {
            close(reserve)
            reserve = -1
        }
        context.fireChannelInactive()
    }
}
