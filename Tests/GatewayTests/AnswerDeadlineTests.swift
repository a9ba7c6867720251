import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import Logging
import NIOCore
import Synchronization
import Testing

@testable import HeraldHTTPServer

/// A route's answer deadline (docs/architecture.md, "Answer deadline"): the server answers a
/// request its handler has not answered in time, closes the connection after it, and lets the
/// handler finish in the request's own task; a request answered in time is untouched.
@Suite struct AnswerDeadlineTests {
    /// A handler that answers `/slow` only once the test lets it, and counts what it finished.
    final class Held: Sendable {
        let release = ReadinessGate<Void>()
        let finished = Atomic<Int>(0)
    }

    static func server(_ held: Held) async throws -> HTTPServer {
        var routes = RouteBuilder()
        let late = ServerResponse(status: .badGateway, body: ByteBuffer(string: "not yet"))
        routes.add(.exact("/fast"), [.GET], answerDeadline: AnswerDeadline(within: .seconds(30), response: late)) { _ in
            ServerResponse(status: .ok, body: ByteBuffer(string: "fast"))
        }
        routes.add(.exact("/slow"), [.GET], answerDeadline: AnswerDeadline(within: .milliseconds(200), response: late)) { _ in
            try? await held.release.wait()
            held.finished.add(1, ordering: .relaxed)
            return ServerResponse(status: .ok, body: ByteBuffer(string: "slow"))
        }
        return try await HTTPServer.bind(
            host: "127.0.0.1", port: 0, handler: routes.router, logger: Logger(label: "test"), clock: SystemClock())
    }

    @Test func aHandlerPastItsDeadlineIsAnsweredByTheServerAndFinishesInItsOwnTask() async throws {
        let held = Held()
        let server = try await Self.server(held)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await server.serve() }
            // The client waits for the server's close: it comes after the deadline's answer,
            // while the handler is still held.
            let (text, closed) = await RawHTTP.exchangeUntilClosedOffPool(
                port: server.port, head: "GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            let answers = text.components(separatedBy: "HTTP/1.1 ").dropFirst()
            #expect(closed)
            #expect(answers.count == 2)
            #expect(answers.first?.hasPrefix("200 OK\r\n") == true)
            #expect(answers.first?.hasSuffix("fast") == true)
            #expect(answers.last?.hasPrefix("502 Bad Gateway\r\n") == true)
            #expect(answers.last?.lowercased().contains("connection: close") == true)
            #expect(answers.last?.contains("X-Request-Id: ") == true)
            #expect(answers.last?.hasSuffix("not yet") == true)
            #expect(held.finished.load(ordering: .relaxed) == 0)
            // Let the handler go: it finishes (its answer is dropped), and the server drains.
            held.release.open(())
            #expect(await eventually(within: .seconds(30)) { held.finished.load(ordering: .relaxed) == 1 })
            await server.shutdown()
        }
    }
}
