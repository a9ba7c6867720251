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

/// Every request error becomes its response through its route's renderer; the server's own errors
/// get each front end's codes.
@Suite struct ErrorResponderTests {
    func json(_ response: ServerResponse) throws -> JSONValue { try JSONParser.parse(Array(response.body.readableBytesView)) }

    @Test func matrixErrorsCarryErrcodeErrorAndExtraFields() throws {
        let error = NotifyError.dispatchFailed(count: 2, first: .apns(status: 503, .serviceUnavailable), rejected: ["k1"])
        let response = ErrorResponder.response(for: error, errors: MatrixErrors())
        #expect(response.status == .badGateway)
        #expect(response.headers.first(name: "Content-Type") == "application/json")
        #expect(
            try json(response)
                == ["errcode": "M_UNKNOWN", "error": "Failed to dispatch to 2 device(s): APNs 503 ServiceUnavailable", "rejected": ["k1"]])
    }

    @Test func gorushErrorsCarryCodeAndMessage() throws {
        let response = ErrorResponder.response(for: ServerError.tooLarge(limit: 1024), errors: GorushErrors())
        #expect(response.status == .payloadTooLarge)
        #expect(try json(response) == ["code": 413, "message": "Request body exceeds 1024 bytes"])
    }

    @Test func headersOfTheErrorAreSent() {
        let response = ErrorResponder.response(for: ServerError.methodNotAllowed(allow: ["GET", "HEAD"]), errors: MatrixErrors())
        #expect(response.status == .methodNotAllowed)
        #expect(response.headers.first(name: "Allow") == "GET, HEAD")
    }

    @Test func anErrorThatIsNotAnHTTPErrorIs500WithoutDetails() throws {
        struct Leaky: Error { let secret = "s3cret" }
        let response = ErrorResponder.response(for: Leaky(), errors: MatrixErrors())
        #expect(response.status == .internalServerError)
        #expect(try json(response) == ["errcode": "M_UNKNOWN", "error": "Internal server error"])
    }

    /// The server names its own errors by kind; the Matrix renderer gives each the code the Matrix
    /// spec (or Sygnal) uses, and every kind has one.
    @Test(arguments: ServerError.Kind.allCases)
    func everyServerErrorHasItsMatrixCode(kind: ServerError.Kind) throws {
        let expected: [ServerError.Kind: String] = [
            .notFound: "M_UNRECOGNIZED", .methodNotAllowed: "M_UNRECOGNIZED", .malformed: "M_UNRECOGNIZED", .tooLarge: "M_TOO_LARGE",
            .busy: "M_LIMIT_EXCEEDED", .unavailable: "M_UNAVAILABLE", .requestTimeout: "M_UNKNOWN", .internalError: "M_UNKNOWN",
        ]
        let response = MatrixErrors().render(ServerError(kind, .badRequest, "x"))
        #expect(try json(response)["errcode"] == .string(try #require(expected[kind])))
    }

    @Test func aSubtreeIsItsPathAndWhatLiesBelowIt() {
        let relay = Router.PathMatch.subtree("/relay-to")
        #expect(relay.matches("/relay-to"))
        #expect(relay.matches("/relay-to/"))
        #expect(relay.matches("/relay-to/production/abc"))
        #expect(!relay.matches("/relay-tox"))
        #expect(!relay.matches("/relay-t"))
        #expect(!relay.matches("/relay"))
        #expect(!relay.matches("/other/relay-to/x"))
        #expect(!Router.PathMatch.exact("/relay-to").matches("/relay-to/x"))
    }

    @Test func routesCarryTheirOwnLimitAndDialect() async throws {
        var builder = RouteBuilder(defaultMaxBodyBytes: 100, errors: MatrixErrors())
        builder.add(.exact("/g"), [.POST], maxBodyBytes: 7, errors: GorushErrors()) { _ in throw ServerError.unavailable("down") }
        builder.add(.subtree("/m"), [.GET]) { _ in .empty(.ok) }
        let routes = builder.router
        #expect(routes.policy(forPath: "/g").maxBodyBytes == 7)
        #expect(routes.policy(forPath: "/g").errors is GorushErrors)
        #expect(routes.policy(forPath: "/m/deeper").maxBodyBytes == 100)
        #expect(routes.policy(forPath: "/elsewhere").errors is MatrixErrors)
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
            config: StatusConfig().gorush, delivery: PushkinStatusSender(pushkins: [:]), queue: { BrokenQueue() }, logger: logger,
            metrics: NOOPMetricsHandler.instance, clock: SystemClock())
        let body = Array(#"{"notifications":[{"tokens":["0a"],"platform":1,"message":"hi"}]}"#.utf8)
        let error = await #expect(throws: GorushError.self) { try await api.handle(body: body) }
        #expect(error == .queueUnavailable)
        let response = ErrorResponder.response(for: try #require(error), errors: GorushErrors())
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
            config: StatusConfig().gorush, delivery: PushkinStatusSender(pushkins: [:]), queue: { BrokenQueue() }, logger: logger,
            metrics: PrometheusMetricsFactory(registry: registry), clock: SystemClock())
        let job = QueuedGorushJob(id: 7, body: Array(#"{"tokens":["0a"],"platform":1,"message":"hi"}"#.utf8))
        await api.process(job, store: BrokenQueue())
        var text: [UInt8] = []
        registry.emit(into: &text)
        #expect(String(decoding: text, as: UTF8.self).contains("herald_gorush_jobs_sent_again_total 1"))
    }
}
