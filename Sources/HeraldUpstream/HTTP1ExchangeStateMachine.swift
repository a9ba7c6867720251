import HeraldCore
import NIOCore
import NIOHTTP1

/// What one keep-alive HTTP/1.1 connection of `HTTP1Upstream` is doing, as a value: idle, carrying
/// one request (its waiter, deadline and the answer read so far), or closed. `HTTP1Exchange` turns
/// the channel's events into calls on it and its actions into writes, promises and timers, so every
/// rule here is tested without a socket (`HTTP1ExchangeStateMachineTests`). `Waiter` is what is told
/// the outcome: the request's answer slot on a connection, anything in a test.
struct HTTP1ExchangeStateMachine<Waiter> {
    private struct InFlight {
        let waiter: Waiter
        /// When it fails unanswered, and the `request_timeout` that says so.
        let deadline: NIODeadline
        let timeout: Duration
        var head: HTTPResponseHead?
        var body: ByteBuffer
    }

    private enum State {
        case idle
        case inFlight(InFlight)
        case closed
    }

    private var state = State.idle
    private let maxBodyBytes: Int

    init(maxBodyBytes: Int) { self.maxBodyBytes = maxBodyBytes }

    enum SendAction {
        /// Write the request, and make sure the timer fires by `armBy`.
        case write(armBy: NIODeadline)
        /// A request is already in flight, or the connection closed: fail this one unsent.
        case refuse(Waiter)
    }

    /// A request to send.
    mutating func send(_ waiter: Waiter, deadline: NIODeadline, timeout: Duration) -> SendAction {
        guard case .idle = state else { return .refuse(waiter) }
        state = .inFlight(InFlight(waiter: waiter, deadline: deadline, timeout: timeout, head: nil, body: ByteBuffer()))
        return .write(armBy: deadline)
    }

    /// The answer's head. An informational one is skipped: the real answer follows.
    mutating func head(_ head: HTTPResponseHead) {
        guard case .inFlight(var request) = state, head.status.code >= 200 else { return }
        request.head = head
        state = .inFlight(request)
    }

    /// A part of the answer's body: kept up to `maxBodyBytes`, the rest read and dropped.
    mutating func body(_ chunk: ByteBuffer) {
        guard case .inFlight(var request) = state, request.body.readableBytes < maxBodyBytes else { return }
        state = .idle  // the buffer is not shared while it grows
        request.body.keep(chunk, upTo: maxBodyBytes)
        state = .inFlight(request)
    }

    enum EndAction {
        case none
        /// Tell `Waiter` the answer; close the connection unless `reusable`.
        case answer(Waiter, UpstreamResponse, reusable: Bool)
    }

    /// The answer ended.
    mutating func end() -> EndAction {
        guard case .inFlight(let request) = state, let head = request.head else { return .none }
        let reusable = head.isKeepAlive
        state = reusable ? .idle : .closed
        let response = UpstreamResponse(status: Int(head.status.code), headers: head.headers, body: request.body)
        return .answer(request.waiter, response, reusable: reusable)
    }

    /// The connection sat idle (`IdleStateHandler`): true when it should close (nothing in flight).
    mutating func idleTimeout() -> Bool {
        guard case .idle = state else { return false }
        state = .closed
        return true
    }

    enum TimerAction {
        case none
        /// The request is not due yet: arm the timer again by its deadline.
        case rearm(NIODeadline)
        /// The request's deadline passed: fail `Waiter` with `Deadline.Exceeded(after: timeout)` and close.
        case expire(Waiter, timeout: Duration)
    }

    /// The connection's timer fired at `now` (the event loop's time).
    mutating func timerFired(now: NIODeadline) -> TimerAction {
        guard case .inFlight(let request) = state else { return .none }
        guard now >= request.deadline else { return .rearm(request.deadline) }
        state = .closed
        return .expire(request.waiter, timeout: request.timeout)
    }

    /// The connection closed or failed: the request in flight, if any, fails.
    mutating func close() -> Waiter? {
        defer { state = .closed }
        if case .inFlight(let request) = state { return request.waiter }
        return nil
    }

    /// Nothing in flight, and open (for tests and diagnostics).
    var isIdle: Bool {
        if case .idle = state { return true }
        return false
    }
}
