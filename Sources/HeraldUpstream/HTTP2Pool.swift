package import HeraldCore
import NIOCore
import NIOPosix
package import NIOSSL
import Synchronization

/// One origin's HTTP/2 connections and the one place its requests wait
/// (docs/architecture.md, "Admission"): at most `max_concurrent_streams` requests in flight on
/// each connection, the others in the pool's queue, by source in turn (`AsyncLimiter` over an
/// `AdmissionQueue`), for at most `request_timeout` when the pool has a clock. An admitted request is placed on a
/// connection with a free stream (`StreamPlacement`), one on its own event loop first, and does
/// not wait again except for a connection being opened. The connections (`HTTP2Upstream`) spread
/// over the event loops; each is replaced on the next request once lost, sent GOAWAY or out of
/// stream ids.
///
/// A caller that holds a slot for longer than one request (an APNs device's whole dispatch, so
/// that the devices beyond the streams wait before their payloads are built) takes it from
/// `admission` and sends through `admitted`.
package final class HTTP2Pool: UpstreamTransport {
    private let connections: [HTTP2Upstream]
    /// The pool's one queue: a slot for each stream of each connection.
    package let admission: AsyncLimiter
    private let placement: Mutex<StreamPlacement>

    /// `connections` connections to `origin` (`https://host[:port]`), spread over the event loops
    /// when there are several; TLS as `tls` offers, the context one of `contexts`.
    package convenience init(
        origin: String, settings: UpstreamSettings, connections: Int, tls: TLSConfiguration, contexts: TLSContexts = TLSContexts(),
        clock: (any HeraldClock)?, metrics: AdmissionMetrics? = nil
    ) throws {
        let parsed = try UpstreamOrigin(origin)
        guard parsed.secure else { throw UpstreamOriginError(url: origin) }
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let members = try (0..<max(1, connections)).map { member in
            try HTTP2Upstream(
                origin: parsed, settings: settings, tls: tls, offering: ["h2"], eventLoop: loops[member % loops.count],
                contexts: contexts, loopClock: clock?.loopClock ?? EventLoopClock())
        }
        self.init(connections: members, settings: settings, clock: clock, metrics: metrics)
    }

    /// A pool of `connections`, already made.
    init(connections: [HTTP2Upstream], settings: UpstreamSettings, clock: (any HeraldClock)?, metrics: AdmissionMetrics? = nil) {
        self.connections = connections
        admission = AsyncLimiter(
            limit: connections.count * settings.maxConcurrentStreams, maxWait: settings.requestTimeout, clock: clock, metrics: metrics)
        placement = Mutex(StreamPlacement(connections: connections.count, limit: settings.maxConcurrentStreams))
    }

    /// Waits for a slot in the pool's queue, as the request's source, then sends.
    package func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        try await admission.acquire(turn: RequestContext.source)
        defer { admission.release() }
        return try await sendAdmitted(request)
    }

    /// Sends for a caller that holds a slot of `admission`.
    package var admitted: some UpstreamTransport { Admitted(pool: self) }

    private struct Admitted: UpstreamTransport {
        let pool: HTTP2Pool
        func send(_ request: UpstreamRequest) async throws -> UpstreamResponse { try await pool.sendAdmitted(request) }
    }

    private func sendAdmitted(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        let connection: Int
        if connections.count == 1 {
            connection = 0
        } else {
            // Local: a connection ready on this thread's loop (one still to be opened is not yet
            // local, so a pool's first requests open all of its connections).
            let connections = self.connections
            connection = placement.withLock { $0.place { connections[$0].isOnCurrentEventLoop } }
        }
        defer {
            if connections.count > 1 { placement.withLock { $0.done(connection) } }
        }
        return try await connections[connection].send(request)
    }

    package func shutdown() async {
        for connection in connections { await connection.shutdown() }
    }
}
