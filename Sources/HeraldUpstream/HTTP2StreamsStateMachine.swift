import HeraldCore
import NIOCore
import NIOHTTP2

/// The requests in flight on one HTTP/2 connection, as a value: which stream carries which request
/// (client stream ids: odd, increasing), each one's deadline and answer so far, and the
/// flow-control window the server is owed, on the connection and on each stream. `HTTP2Streams`
/// turns the connection's events into calls on it and its actions into frames, promises and the
/// timer, so every rule here is tested without a socket (`HTTP2StreamsStateMachineTests`).
/// `Waiter` is what is told a request's outcome: its answer slot on a connection, anything in a test.
struct HTTP2StreamsStateMachine<Waiter> {
    /// Bytes read before the window is given back: half of HTTP/2's initial window (RFC 9113 §6.9.2).
    static var windowUpdateThreshold: Int { 32_768 }

    private struct Stream {
        let waiter: Waiter
        let deadline: NIODeadline
        let timeout: Duration
        var reader: HTTP2ResponseReader
        /// DATA bytes received on the stream since its last WINDOW_UPDATE.
        var unacknowledged = 0
    }

    /// The next stream's id (an `Int`: one past the last id must not trap).
    private var nextStreamID: Int
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var closed = false
    /// DATA bytes received on the connection since its last WINDOW_UPDATE.
    private var unacknowledged = 0
    private let maxBodyBytes: Int

    init(firstStreamID: HTTP2StreamID = 1, maxBodyBytes: Int) {
        nextStreamID = Int(firstStreamID)
        self.maxBodyBytes = maxBodyBytes
    }

    enum OpenAction {
        /// Send the request on stream `id`; make sure the timer fires by `armBy`.
        case open(HTTP2StreamID, armBy: NIODeadline)
        /// The connection is closed: fail this request unsent.
        case refuse(Waiter)
        /// The connection has used its last stream id: fail this request unsent, and retire the connection.
        case exhausted(Waiter)
    }

    /// A request to send, while the connection is `active`.
    mutating func open(_ waiter: Waiter, deadline: NIODeadline, timeout: Duration, active: Bool = true) -> OpenAction {
        guard !closed, active else { return .refuse(waiter) }
        guard nextStreamID <= Int(HTTP2StreamID.maxID) else { return .exhausted(waiter) }
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        streams[id] = Stream(waiter: waiter, deadline: deadline, timeout: timeout, reader: HTTP2ResponseReader(maxBodyBytes: maxBodyBytes))
        return .open(id, armBy: deadline)
    }

    /// The request on `id` is given up on (its caller's cancellation): true when its stream is
    /// still open and must be reset.
    mutating func abandon(_ id: HTTP2StreamID) -> Bool {
        streams.removeValue(forKey: id) != nil
    }

    struct Expired {
        var id: HTTP2StreamID
        var waiter: Waiter
        var timeout: Duration
    }

    /// The timer fired at `now` (the event loop's time): the requests past their deadline, each to
    /// fail with `Deadline.Exceeded(after: timeout)` and its stream reset, and the earliest deadline
    /// left to arm the timer by.
    mutating func timerFired(now: NIODeadline) -> (expired: [Expired], next: NIODeadline?) {
        var expired: [Expired] = []
        var next: NIODeadline?
        for (id, stream) in streams {
            if stream.deadline <= now {
                expired.append(Expired(id: id, waiter: stream.waiter, timeout: stream.timeout))
            } else {
                next = min(next ?? stream.deadline, stream.deadline)
            }
        }
        for gone in expired { streams.removeValue(forKey: gone.id) }
        return (expired, next)
    }

    /// The windows to give back after `length` DATA bytes (padding included) on `id`: on the
    /// connection always, on the stream while its answer is still coming (a WINDOW_UPDATE on a
    /// closed stream is an error). Each is the increment to send, or nil.
    mutating func received(_ length: Int, on id: HTTP2StreamID, endStream: Bool) -> (connection: Int?, stream: Int?) {
        guard length > 0 else { return (nil, nil) }
        var connection: Int?
        unacknowledged += length
        if unacknowledged >= Self.windowUpdateThreshold {
            connection = unacknowledged
            unacknowledged = 0
        }
        var stream: Int?
        if !endStream, var open = streams[id] {
            open.unacknowledged += length
            if open.unacknowledged >= Self.windowUpdateThreshold {
                stream = open.unacknowledged
                open.unacknowledged = 0
            }
            streams[id] = open
        }
        return (connection, stream)
    }

    enum ReadAction {
        case none
        /// Tell `Waiter` the answer; the stream is done.
        case answer(Waiter, UpstreamResponse)
        /// Fail `Waiter`; reset the stream when `reset` (the server did not already).
        case fail(Waiter, UpstreamConnectionError, reset: Bool)
    }

    /// A frame on stream `id`. A stream not (or no longer) carrying a request is ignored.
    mutating func read(_ payload: HTTP2Frame.FramePayload, on id: HTTP2StreamID) -> ReadAction {
        guard let index = streams.index(forKey: id) else { return .none }
        switch streams.values[index].reader.receive(payload) {
        case .reading:
            return .none
        case .done(let response):
            return .answer(streams.remove(at: index).value.waiter, response)
        case .failed(let error):
            let waiter = streams.remove(at: index).value.waiter
            if case .reset = error { return .fail(waiter, error, reset: false) }
            return .fail(waiter, error, reset: true)
        }
    }

    /// Stream `id` closed, failed or could not be written: its request, if any, fails (no reset).
    mutating func streamEnded(_ id: HTTP2StreamID) -> Waiter? {
        streams.removeValue(forKey: id)?.waiter
    }

    /// The connection closed: every request in flight fails, and no stream opens any more.
    mutating func close() -> [Waiter] {
        closed = true
        defer { streams = [:] }
        return streams.values.map(\.waiter)
    }

    var isClosed: Bool { closed }

    /// How many requests are in flight (for tests and diagnostics).
    var inFlight: Int { streams.count }
}
