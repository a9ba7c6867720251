package import NIOCore
import NIOPosix

/// The threads the PostgreSQL stores' connections run on, apart from the request loops: a
/// statement's answer is read as soon as it comes, not after the requests a busy request loop
/// has queued, and the record's statements are sent and their rows read there too
/// (`PostgresDeadline.bounded(_:clock:on:_:)`). One thread per four cores, at least one.
package enum PostgresLoop {
    /// For every store, for the process's life (as NIO's own singleton group).
    package static let group: any EventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount / 4))

    package static var loop: any EventLoop { group.next() }
}
