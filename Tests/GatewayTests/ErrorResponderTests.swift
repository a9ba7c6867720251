import CoreMetrics
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import Logging
import NIOHTTP1
import Prometheus
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer
@testable import StatusAdapter

/// Every request error becomes its response in one place, in the dialect of its route.
@Suite struct ErrorResponderTests {
    func json(_ response: ServerResponse) throws -> JSONValue { try JSONParser.parse(Array(response.body.readableBytesView)) }

    @Test func matrixErrorsCarryErrcodeErrorAndExtraFields() throws {
        let error = NotifyError.dispatchFailed(count: 2, first: .apns(status: 503, .serviceUnavailable), rejected: ["k1"])
        let response = ErrorResponder.response(for: error, dialect: .matrix)
        #expect(response.status == .badGateway)
        #expect(response.headers.first(name: "Content-Type") == "application/json")
        #expect(
            try json(response)
                == ["errcode": "M_UNKNOWN", "error": "Failed to dispatch to 2 device(s): APNs 503 ServiceUnavailable", "rejected": ["k1"]])
    }

    @Test func gorushErrorsCarryCodeAndMessage() throws {
        let response = ErrorResponder.response(for: GatewayError.tooLarge(limit: 1024), dialect: .gorush)
        #expect(response.status == .payloadTooLarge)
        #expect(try json(response) == ["code": 413, "message": "Request body exceeds 1024 bytes"])
    }

    @Test func headersOfTheErrorAreSent() {
        let response = ErrorResponder.response(for: GatewayError.methodNotAllowed(allow: ["GET", "HEAD"]), dialect: .matrix)
        #expect(response.status == .methodNotAllowed)
        #expect(response.headers.first(name: "Allow") == "GET, HEAD")
    }

    @Test func anErrorThatIsNotAnHTTPErrorIs500WithoutDetails() throws {
        struct Leaky: Error { let secret = "s3cret" }
        let response = ErrorResponder.response(for: Leaky(), dialect: .matrix)
        #expect(response.status == .internalServerError)
        #expect(try json(response) == ["errcode": "M_UNKNOWN", "error": "Internal server error"])
    }

    @Test func routesCarryTheirOwnLimitAndDialect() async throws {
        var routes = RouteTable(defaultMaxBodyBytes: 100)
        routes.add(.exact("/g"), [.POST], maxBodyBytes: 7, dialect: .gorush) { _ in throw GatewayError.unavailable("down") }
        routes.add(.subtree("/m"), [.GET]) { _ in .empty(.ok) }
        #expect(routes.policy(forPath: "/g").maxBodyBytes == 7)
        #expect(routes.policy(forPath: "/g").dialect == .gorush)
        #expect(routes.policy(forPath: "/m/deeper").maxBodyBytes == 100)
        #expect(routes.policy(forPath: "/elsewhere").dialect == .matrix)
        let thrown = await routes.handle(ServerRequest(method: .POST, uri: "/g"))
        #expect(thrown.status == .serviceUnavailable)
        #expect(try json(thrown) == ["code": 503, "message": "down"])
        let wrongMethod = await routes.handle(ServerRequest(method: .GET, uri: "/g?x=1"))
        #expect(wrongMethod.status == .methodNotAllowed)
        #expect(try json(wrongMethod) == ["code": 405, "message": "Unrecognized request"])
    }
}

/// A Status store that cannot be written: gorush's queue answers 503 with `Retry-After`, so that
/// status-go tries again, and nothing is acknowledged.
extension ErrorResponderTests {
    struct BrokenQueue: GorushQueueStore {
        struct Failure: Error {}
        func enqueueGorush(_ bodies: [[UInt8]], maxJobs: Int, maxBytes: Int) async throws -> Bool { throw Failure() }
        func claimGorush(limit: Int, now: Date, until: Date) async throws -> [QueuedGorushJob] { throw Failure() }
        func completeGorush(id: Int64) async throws { throw Failure() }
        func recoverGorushClaims() async throws { throw Failure() }
        func gorushQueueDepth() async throws -> (jobs: Int, bytes: Int) { throw Failure() }
    }

    @Test func aGorushQueueThatCannotBeWrittenIs503WithRetryAfter() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let api = GorushAPI(
            config: StatusConfig().gorush, delivery: PushkinStatusSender(apns: nil, fcm: nil), queue: { BrokenQueue() }, logger: logger,
            metrics: NOOPMetricsHandler.instance)
        let body = Array(#"{"notifications":[{"tokens":["0a"],"platform":1,"message":"hi"}]}"#.utf8)
        let error = await #expect(throws: GorushError.self) { try await api.handle(body: body) }
        #expect(error == .queueUnavailable)
        let response = ErrorResponder.response(for: try #require(error), dialect: .gorush)
        #expect(response.status == .serviceUnavailable)
        #expect(response.headers.first(name: "Retry-After") == "5")
        #expect(try json(response) == ["code": 503, "message": "Queue is unavailable, try again later."])
        #expect(api.appStats()["submitted_tasks"] == 0)  // nothing was acknowledged
    }

    /// A job sent whose removal from the queue failed (the database went away meanwhile) stays
    /// queued and is sent again when its claim runs out: counted, as a push that may arrive twice.
    @Test func aJobSentButNotRemovedIsCountedAsOneToBeSentAgain() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let registry = PrometheusCollectorRegistry()
        let api = GorushAPI(
            config: StatusConfig().gorush, delivery: PushkinStatusSender(apns: nil, fcm: nil), queue: { BrokenQueue() }, logger: logger,
            metrics: PrometheusMetricsFactory(registry: registry))
        let job = QueuedGorushJob(id: 7, body: Array(#"{"tokens":["0a"],"platform":1,"message":"hi"}"#.utf8))
        await api.process(job, store: BrokenQueue())
        var text: [UInt8] = []
        registry.emit(into: &text)
        #expect(String(decoding: text, as: UTF8.self).contains("herald_gorush_jobs_sent_again_total 1"))
    }
}
