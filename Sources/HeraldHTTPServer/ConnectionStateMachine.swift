import NIOCore
import NIOHTTP1

/// What one HTTP/1.1 connection is doing with the request parts it reads, without any I/O: the
/// server feeds it parts and carries out the actions it returns. A body is collected up to the
/// route's limit; past it (announced by `Content-Length` or streamed) the answer is a 413, after
/// which up to four times the limit, and at least `minimumDiscard` bytes, are read and discarded (so
/// that closing does not reset the connection before the client has read its answer) and anything
/// else ends the connection. A head with `Expect: 100-continue` within the limit gets its interim 100.
struct ConnectionStateMachine {
    /// Bytes of a refused body read and thrown away at least (`http.max_discarded_body_bytes`).
    var minimumDiscard = 0

    enum State: Equatable {
        /// Waiting for a request head.
        case idle
        /// Collecting the body of `head`, up to `limit` bytes.
        case receiving(head: HTTPRequestHead, body: ByteBuffer, limit: Int)
        /// A request was handed to the handler; waiting for its response to be written.
        case responding
        /// After a 413: `discarded` body bytes read of at most `4 * limit`.
        case draining(discarded: Int, limit: Int)
        case closed
    }

    enum Action: Equatable {
        case none
        /// Answer 413 for `limit` and stop reading requests on this connection.
        case refuse(limit: Int, version: HTTPVersion)
        /// Send the interim `100 Continue` the client waits for before its body.
        case sendContinue(version: HTTPVersion)
        /// Hand the request to the handler, then call `responded(keepAlive:)`.
        case dispatch(head: HTTPRequestHead, body: ByteBuffer)
        /// Close the connection.
        case close
    }

    private(set) var state = State.idle

    /// A request head, with the body limit of its path.
    mutating func head(_ head: HTTPRequestHead, limit: Int) -> Action {
        switch state {
        case .idle:
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > limit {
                state = .draining(discarded: 0, limit: limit)
                return .refuse(limit: limit, version: head.version)
            }
            state = .receiving(head: head, body: ByteBuffer(), limit: limit)
            if head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                return .sendContinue(version: head.version)
            }
            return .none
        case .receiving, .responding, .draining, .closed:
            state = .closed
            return .close
        }
    }

    mutating func body(_ chunk: ByteBuffer) -> Action {
        switch state {
        case .receiving(let head, var body, let limit):
            guard body.readableBytes + chunk.readableBytes <= limit else {
                state = .draining(discarded: 0, limit: limit)
                return .refuse(limit: limit, version: head.version)
            }
            if body.readableBytes == 0 {
                // A body that comes in one read is kept as it is, without a copy.
                state = .receiving(head: head, body: chunk, limit: limit)
                return .none
            }
            var chunk = chunk
            state = .idle  // no copy-on-write of `body` while it is mutated
            body.writeBuffer(&chunk)
            state = .receiving(head: head, body: body, limit: limit)
            return .none
        case .draining(let discarded, let limit) where discarded + chunk.readableBytes <= max(4 * limit, minimumDiscard):
            state = .draining(discarded: discarded + chunk.readableBytes, limit: limit)
            return .none
        case .idle, .responding, .draining, .closed:
            state = .closed
            return .close
        }
    }

    mutating func end() -> Action {
        switch state {
        case .receiving(let head, let body, _):
            state = .responding
            return .dispatch(head: head, body: body)
        case .idle, .responding, .draining, .closed:
            state = .closed
            return .close
        }
    }

    /// The response to the dispatched request was written.
    mutating func responded(keepAlive: Bool) -> Action {
        guard case .responding = state, keepAlive else {
            state = .closed
            return .close
        }
        state = .idle
        return .none
    }
}

extension ConnectionStateMachine {
    // Where the connection is, for `ConnectionHandler`.
    var isReceiving: Bool {
        if case .receiving = state { return true }
        return false
    }

    var isResponding: Bool {
        if case .responding = state { return true }
        return false
    }

    var isDraining: Bool {
        if case .draining = state { return true }
        return false
    }
}
