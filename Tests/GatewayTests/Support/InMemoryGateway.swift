import Foundation
import HeraldCore
import HeraldHTTPServer
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Pushkins

@testable import Gateway

/// What a test asks of a gateway, driven in memory or over sockets.
protocol GatewayUnderTest: Sendable {
    var gateway: Gateway { get }
    func notify(_ body: JSONValue) async throws -> TestResponse
    func metricsText() async throws -> String
    func stop() async
}

extension RunningGateway: GatewayUnderTest {}

/// A gateway whose routes are driven without a socket (as Hummingbird's router test framework
/// drives an application beside its live mode): the requests go to the routes that its listener
/// would serve, in the request's own context (its id and source), and an answer's
/// `afterAnswer` runs as on an open connection; the request's task prefers an event loop, as the
/// server's does. For what a test asks of the routes (validation,
/// routing, dispatch and the answers' bodies); what needs a connection (its deadlines, its
/// limits, the transports) is `RunningGateway`'s.
final class InMemoryGateway: GatewayUnderTest {
    let gateway: Gateway

    private init(gateway: Gateway) {
        self.gateway = gateway
    }

    static func start(_ yaml: String, registry: PushkinRegistry = .standard, clock: any HeraldClock = SystemClock()) async throws
        -> InMemoryGateway
    {
        InMemoryGateway(gateway: try await RunningGateway.built(yaml, registry: registry, clock: clock))
    }

    /// 127.0.0.1, as a local test client is.
    static let loopbackPeer = try? SocketAddress(ipAddress: "127.0.0.1", port: 1)
    static let loopback = loopbackPeer.flatMap(RequestSource.init(peer:))

    func stop() async {
        await gateway.close()
    }

    func notify(_ body: String) async throws -> TestResponse {
        await request(.POST, "/_matrix/push/v1/notify", body: Array(body.utf8))
    }

    func notify(_ body: JSONValue) async throws -> TestResponse {
        await request(.POST, "/_matrix/push/v1/notify", body: JSONWriter.serialize(body))
    }

    /// What the metrics listener would serve.
    func metricsText() async throws -> String {
        String(decoding: gateway.metrics.exposition(), as: UTF8.self)
    }

    /// The delivery trace of `event`, as the metrics listener serves it; `query` adds `&pushkey=…`
    /// or `&app_id=…`.
    func deliveries(event: String, query: String = "") async throws -> [JSONValue] {
        let escaped = event.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? event
        return await traced("event_id=\(escaped)\(query)")
    }

    /// A device's delivery trace across its events.
    func deliveries(pushkey: String) async throws -> [JSONValue] {
        await traced("pushkey=\(pushkey.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? pushkey)")
    }

    private func traced(_ query: String) async -> [JSONValue] {
        let endpoint = DeliveriesEndpoint(once: gateway.onceSetup.once, token: nil)
        let response = await endpoint.handle(ServerRequest(method: .GET, uri: "\(DeliveriesEndpoint.path)?\(query)"))
        return (try? JSONParser.parse(response.body.readableBytesView))?["deliveries"]?.arrayValue ?? []
    }

    /// The answer of the main listener's routes to one request from 127.0.0.1 (its peer; its
    /// source unless `source` says otherwise).
    func request(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = [],
        source: RequestSource? = InMemoryGateway.loopback
    ) async -> TestResponse {
        var fields = HTTPHeaders(headers)
        if body != nil { fields.add(name: "Content-Type", value: "application/json") }
        var request = ServerRequest(method: method, uri: path, headers: fields, body: ByteBuffer(bytes: body ?? []))
        request.peer = Self.loopbackPeer
        request.source = source
        let routes = gateway.routes
        let current = RequestContext.Current(requestId: request.requestId, source: source)
        let sent = request
        // On an event loop, as the server runs a request (its task prefers its connection's loop):
        // not on the cooperative pool that the suite's other tests keep busy.
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        var response = await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
            await RequestContext.$current.withValue(current) { await routes.handle(sent) }
        }
        response.headers.replaceOrAdd(name: "X-Request-Id", value: request.requestId)
        if let afterAnswer = response.afterAnswer { await afterAnswer(true).wait() }
        return TestResponse(status: Int(response.status.code), headers: response.headers, body: Array(response.body.readableBytesView))
    }
}
