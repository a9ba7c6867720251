import Synchronization

/// The response an upstream call waits for (docs/architecture.md, "The upstream-call path"): given
/// once, by the connection's event loop or by the caller's cancellation from any thread; the first
/// completion wins and later ones are ignored, as a promise's are. The caller awaits it directly,
/// without a promise and its future (what that saves is counted against bench/allocation-limits).
final class ResponseSlot<Value: Sendable>: Sendable {
    private enum State {
        /// No response yet; the caller's continuation once it waits.
        case waiting(UnsafeContinuation<Value, any Error>?)
        case answered(Result<Value, any Error>)
    }

    private let state = Mutex(State.waiting(nil))

    init() {}

    func succeed(_ value: Value) { complete(.success(value)) }

    func fail(_ error: any Error) { complete(.failure(error)) }

    private func complete(_ result: Result<Value, any Error>) {
        let waiter = state.withLock { state -> UnsafeContinuation<Value, any Error>? in
            guard case .waiting(let waiter) = state else { return nil }
            state = .answered(result)
            return waiter
        }
        waiter?.resume(with: result)
    }

    /// The response, once it is given; awaited by one caller, once.
    func value() async throws -> Value {
        try await withUnsafeThrowingContinuation { continuation in
            let answered = state.withLock { state -> Result<Value, any Error>? in
                switch state {
                case .waiting:
                    state = .waiting(continuation)
                    return nil
                case .answered(let result):
                    return result
                }
            }
            if let answered { continuation.resume(with: answered) }
        }
    }

    /// The response if it has been given (for a test on an embedded loop).
    var answer: Result<Value, any Error>? {
        state.withLock { state in
            guard case .answered(let result) = state else { return nil }
            return result
        }
    }
}
