import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP server on its own, with a handler that answers each request with its path, padded to
/// `size` bytes, and counts them: the order of pipelined answers, a client that does not read its
/// answers, and a server whose task is cancelled.
@Suite struct HTTPServerTests {
    final class Echo: HTTPHandler {
        let size: Int
        let handled = Atomic<Int>(0)

        let delay: Duration?

        init(size: Int = 0, delay: Duration? = nil) {
            self.size = size
            self.delay = delay
        }

        func handle(_ request: ServerRequest) async -> ServerResponse {
            if let delay { try? await letRealTimePass(delay) }
            handled.add(1, ordering: .relaxed)
            var body = ByteBuffer(string: request.path)
            body.writeRepeatingByte(UInt8(ascii: "."), count: max(0, size - body.readableBytes))
            return ServerResponse(status: .ok, body: body)
        }
    }

    static func bind(_ handler: some HTTPHandler) async throws -> HTTPServer {
        try await HTTPServer.bind(host: "127.0.0.1", port: 0, handler: handler, logger: Logger(label: "test"), clock: SystemClock())
    }

    @Test func pipelinedRequestsAreAnsweredInOrderAndConnectionCloseEndsTheConnection() async throws {
        let server = try await Self.bind(Echo())
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await server.serve() }
            let (answer, closedByServer) = await RawHTTP.exchangeUntilClosedOffPool(
                port: server.port,
                head: "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
                    + "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            // The server closed after the third answer (the client's read did not end at its timeout).
            #expect(closedByServer)
            let answers = answer.components(separatedBy: "HTTP/1.1 ").dropFirst()
            #expect(answers.count == 3)
            #expect(answers.map { $0.components(separatedBy: "\r\n\r\n").last ?? "" } == ["/a", "/b", "/c"])
            #expect(answers.allSatisfy { $0.hasPrefix("200 OK\r\n") && $0.contains("X-Request-Id: ") })
            #expect(answers.last?.lowercased().contains("connection: close") == true)
            #expect(answers.first?.lowercased().contains("connection: close") == false)
            await server.shutdown()
        }
    }

    /// The server checks the fields of every response head itself (SwiftNIO's encoder no longer
    /// does): a field that is not valid HTTP is left out, and could never start a header of its own.
    @Test func aResponseFieldThatIsNotValidHTTPIsLeftOut() async throws {
        struct Splitting: HTTPHandler {
            func handle(_ request: ServerRequest) async -> ServerResponse {
                var headers = HTTPHeaders()
                headers.add(name: "X-Kept", value: "fine")
                headers.add(name: "X-Split", value: "a\r\nX-Injected: 1")
                headers.add(name: "Bad Name", value: "v")
                headers.add(name: "X-Padded", value: "v ")
                return ServerResponse(status: .accepted, headers: headers, body: ByteBuffer(string: "body"))
            }
        }
        let server = try await HTTPServer.bind(
            host: "127.0.0.1", port: 0, handler: Splitting(), logger: Logger(label: "test"), clock: SystemClock())
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await server.serve() }
            let (answer, _) = await RawHTTP.exchangeUntilClosedOffPool(
                port: server.port, head: "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 202 Accepted\r\n"))
            #expect(answer.contains("X-Kept: fine\r\n"))
            #expect(!answer.contains("X-Split"))
            #expect(!answer.contains("X-Injected"))
            #expect(!answer.contains("Bad Name"))
            #expect(!answer.contains("X-Padded"))
            #expect(answer.hasSuffix("\r\n\r\nbody"))
            await server.shutdown()
        }
    }

    @Test func aClientThatDoesNotReadItsAnswersIsNotReadFromEither() async throws {
        let echo = Echo(size: 256 * 1024)
        let server = try await Self.bind(echo)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await server.serve() }
            let requests = 200
            let client = BlockingClient(port: server.port, receiveBuffer: 64 * 1024)
            client.send(String(repeating: "GET /x HTTP/1.1\r\nHost: x\r\n\r\n", count: requests))
            try await letRealTimePass(.seconds(1))
            // The answers fill the socket buffers; past them the server waits instead of holding
            // every answer in memory.
            let whileNotReading = echo.handled.load(ordering: .relaxed)
            #expect(whileNotReading < requests / 2)
            let received = await client.readOffPool(bytes: requests * (256 * 1024))
            #expect(received >= requests * (256 * 1024))
            #expect(echo.handled.load(ordering: .relaxed) == requests)
            client.close()
            await server.shutdown()
        }
    }

    /// While an answer is being made the server goes on reading a client that waits for it (to keep
    /// the socket's read interest), but not one that pipelines: past the socket buffers the client
    /// cannot send faster than the server answers, however long it pipelines.
    /// Work a handler leaves for after its answer that lands later (the delivery record's finishes
    /// on PostgreSQL) lands beside the connection's next request: the sender's next answer does
    /// not wait for it, and the next request's own such work starts only once it has landed.
    /// Answers each request with its path, and leaves work after the answer: it writes down its
    /// start and its end; the work of a path `holds` names lands only at `release()`.
    final class HeldAfterAnswer: HTTPHandler {
        let holds: @Sendable (String) -> Bool
        let steps = Mutex<[String]>([])
        private let held = Mutex<(released: Bool, gates: [(String, ReadinessGate<Void>)])>((false, []))

        init(holding holds: @escaping @Sendable (String) -> Bool) { self.holds = holds }

        func handle(_ request: ServerRequest) async -> ServerResponse {
            var response = ServerResponse(status: .ok, body: ByteBuffer(string: request.path))
            let path = request.path
            response.afterAnswer = { _ in
                self.steps.withLock { $0.append("start \(path)") }
                let gate = ReadinessGate<Void>()
                let now =
                    !self.holds(path)
                    || self.held.withLock { held in
                        if !held.released { held.gates.append((path, gate)) }
                        return held.released
                    }
                guard !now else {
                    self.steps.withLock { $0.append("end \(path)") }
                    return .landed
                }
                return .pending(gate)
            }
            return response
        }

        /// The held work lands, and the work of later answers at once.
        func release() {
            let gates = held.withLock { held in
                held.released = true
                defer { held.gates = [] }
                return held.gates
            }
            for (path, gate) in gates {
                steps.withLock { $0.append("end \(path)") }
                gate.open(())
            }
        }
    }

    @Test func workAfterAnAnswerThatWaitsDoesNotHoldTheConnectionsNextRequest() async throws {
        let handler = HeldAfterAnswer { $0 == "/a" }
        let server = try await Self.bind(handler)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await server.serve() }
            let fd = RawHTTP.connectLoopback(port: server.port)
            #expect(fd >= 0)
            let first = await offPool { RawHTTP.firstAnswer(fd: fd, request: "GET /a HTTP/1.1\r\nHost: x\r\n\r\n") }
            #expect(first.hasPrefix("HTTP/1.1 200 OK") && first.hasSuffix("/a"))
            #expect(await eventually { handler.steps.withLock { $0 } == ["start /a"] })
            // /a's work is held: /b is answered all the same, and its own work waits its turn.
            let second = await offPool { RawHTTP.firstAnswer(fd: fd, request: "GET /b HTTP/1.1\r\nHost: x\r\n\r\n") }
            #expect(second.hasPrefix("HTTP/1.1 200 OK") && second.hasSuffix("/b"))
            #expect(handler.steps.withLock { $0 } == ["start /a"])
            handler.release()
            #expect(await eventually { handler.steps.withLock { $0 } == ["start /a", "end /a", "start /b", "end /b"] })
            close(fd)
            await server.shutdown()
        }
    }

    @Test func workAfterAnAnswerStillRunningWhenTheServerStopsEndsBeforeServeReturns() async throws {
        let handler = HeldAfterAnswer { _ in true }
        let server = try await Self.bind(handler)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                await server.serve()
                handler.steps.withLock { $0.append("served") }
            }
            let fd = RawHTTP.connectLoopback(port: server.port)
            #expect(fd >= 0)
            let answer = await offPool { RawHTTP.firstAnswer(fd: fd, request: "GET /a HTTP/1.1\r\nHost: x\r\n\r\n") }
            #expect(answer.hasPrefix("HTTP/1.1 200 OK"))
            #expect(await eventually { handler.steps.withLock { $0 } == ["start /a"] })
            // The client leaves and the server stops while the work is held: it still runs to its
            // end (a delivery record's finishes), and only then does `serve()` return.
            close(fd)
            server.initiateShutdown()
            #expect(await eventually { !server.isAccepting })
            handler.release()
        }
        #expect(handler.steps.withLock { $0 } == ["start /a", "end /a", "served"])
    }

    @Test func aClientPipeliningFasterThanItIsAnsweredIsNotReadAhead() async throws {
        let echo = Echo(delay: .milliseconds(20))
        let server = try await Self.bind(echo)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await server.serve() }
            let body = String(repeating: "b", count: 64 * 1024)
            let request = "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
            let client = BlockingClient(port: server.port, receiveBuffer: nil)
            // Offers 64 MiB for 2 s; about 100 requests (6.4 MiB) can be answered in that time,
            // and the socket buffers hold a few MiB more.
            let sent = await offPool { client.sendWithoutBlocking(request, times: 1024, for: .seconds(2)) }
            #expect(sent < 24 << 20)
            #expect(sent > 0)
            client.close()
            group.cancelAll()
        }
    }

    @Test(.timeLimit(.minutes(1))) func cancellingTheServerClosesItsIdleConnectionsAndReturns() async throws {
        let server = try await Self.bind(Echo())
        let client = BlockingClient(port: server.port, receiveBuffer: nil)
        // The group ends only once `serve()` has returned: that is the event this waits on.
        await withDiscardingTaskGroup { group in
            group.addTask { await server.serve() }
            // One request answered: the connection is the server's, idle between requests.
            client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await client.readOffPool(bytes: 1) > 0)
            group.cancelAll()
        }
        #expect(await client.readToEndOffPool().closed)
        client.close()
    }
}

/// A blocking TCP client whose reads run on threads of their own (`offPool`).
final class BlockingClient: Sendable {
    let fd: Int32

    init(port: Int, receiveBuffer: Int?) {
        fd = RawHTTP.connectLoopback(port: port, receiveBuffer: receiveBuffer)
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends `text` up to `times` times without waiting for room in the socket, for at most
    /// `limit`; returns the bytes the socket took.
    func sendWithoutBlocking(_ text: String, times: Int, for limit: Duration) -> Int {
        let bytes = Array(text.utf8)
        let end = ContinuousClock.now + limit
        var sent = 0
        var total = bytes.count * times
        while total > 0 && ContinuousClock.now < end {
            let offset = sent % bytes.count
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n > 0 {
                sent += n
                total -= n
            } else if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK {
                break
            } else {
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&poller, 1, 50)
            }
        }
        return sent
    }

    /// Reads until at least `bytes` have arrived, the peer closes, or 20 s pass; returns how many arrived.
    func readOffPool(bytes: Int) async -> Int {
        await offPool { self.read(upTo: bytes).bytes }
    }

    /// Reads until the peer closes (`closed`) or 20 s pass.
    func readToEndOffPool() async -> (bytes: Int, closed: Bool) {
        await offPool { self.read(upTo: .max) }
    }

    /// Reads until the peer closes or 20 s pass; what arrived, as text.
    func readAllOffPool() async -> String {
        await offPool {
            var data: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                data += buffer[0..<n]
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    private func read(upTo bytes: Int) -> (bytes: Int, closed: Bool) {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while total < bytes {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (total, n == 0) }
            total += n
        }
        return (total, false)
    }

    func close() { Glibc.close(fd) }
}
