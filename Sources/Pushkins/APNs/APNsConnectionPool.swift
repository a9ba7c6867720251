import HeraldCore
import HeraldUpstream
import Metrics
import NIOCore
import NIOPosix
import NIOSSL

/// A small pool of long-lived HTTP/2 connections to APNs. Each member is a client holding one
/// connection; requests are multiplexed as streams on it, at most `max_concurrent_streams` at a
/// time and never more than the server's `MAX_CONCURRENT_STREAMS` (further ones wait), and a
/// connection lost or closed by GOAWAY is replaced on the next request. A request goes to a member
/// whose connection is on its own event loop while that member has a free stream (no hand-over
/// between threads: docs/architecture.md, "One thread per request"), otherwise to the least busy.
/// The wait for a stream is Sygnal's `sygnal_apns_queue_time`, and the requests waiting
/// `sygnal_pending_apns_requests`.
final class APNsConnectionPool: UpstreamTransport {
    private let members: [HTTP2Upstream]
    private let load: [AsyncLimiter]
    private let queueTime: Metrics.Timer
    private let pending: Gauge
    private let pendingCount = AtomicCounter()
    /// What the queue time is measured on (docs/architecture.md, "Time").
    private let clock: any HeraldClock

    /// The members share one TLS context, of `contexts`.
    init(config: APNsConfig, metrics: any MetricsFactory, contexts: TLSContexts, clock: any HeraldClock) throws {
        self.clock = clock
        queueTime = Metrics.Timer(label: MetricName.apnsQueueTime, dimensions: [], factory: metrics)
        pending = Gauge(label: MetricName.pendingAPNsRequests, dimensions: [], factory: metrics)
        var members: [HTTP2Upstream] = []
        // Members spread over the event loops, so that each loop's requests find one of their own.
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        for member in 0..<config.connections {
            var tls = TLSConfiguration.makeClientConfiguration()
            if case .certificate(let path, _) = config.auth {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(path).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: path, format: .pem))
            }
            members.append(
                try HTTP2Upstream(
                    origin: config.baseURL, settings: config.upstream, tls: tls, eventLoop: loops[member % loops.count],
                    contexts: contexts))
        }
        self.members = members
        self.load = members.map { _ in AsyncLimiter(limit: config.maxConcurrentStreams) }
    }

    /// Sends on a member on the caller's event loop with a free stream, else on the least busy.
    func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        var index = 0
        for i in 1..<members.count where load[i].inUse < load[index].inUse { index = i }
        if members.count > 1,
            let local = members.indices.first(where: { members[$0].isOnCurrentEventLoop && load[$0].inUse < load[$0].limit })
        {
            index = local
        }
        let start = clock.now
        pending.record(pendingCount.add(1))
        do {
            try await load[index].acquire(turn: RequestContext.source)
        } catch {
            pending.record(pendingCount.add(-1))
            throw error
        }
        pending.record(pendingCount.add(-1))
        queueTime.recordNanoseconds((clock.now - start).nanoseconds)
        defer { load[index].release() }
        return try await members[index].send(request)
    }

    func shutdown() async {
        for member in members { await member.shutdown() }
    }
}
