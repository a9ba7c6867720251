package import Synchronization

/// A one-shot signal carrying a value: `wait()` suspends until `open(_:)` (returning the value) or
/// `fail(_:)` (throwing the error); later waiters return at once. Cancelling a waiter throws
/// `CancellationError` for it alone.
///
/// Its code is inlinable, so that each module specialises it for its value (the delivery record
/// opens one per delivery in flight): unspecialised, each call looked up its generic metadata.
package final class ReadinessGate<Value: Sendable>: Sendable {
    @usableFromInline enum State {
        case waiting([Int: CheckedContinuation<Value, any Error>])
        case open(Value)
        case failed(any Error)
    }
    @usableFromInline let state: Mutex<(state: State, nextId: Int)>

    @inlinable package init() { state = Mutex((.waiting([:]), 0)) }

    /// The value once open, else nil.
    @inlinable package var value: Value? {
        state.withLock {
            if case .open(let value) = $0.state { return value }
            return nil
        }
    }

    @inlinable package func open(_ value: Value) { finish(.open(value)) }
    @inlinable package func fail(_ error: any Error) { finish(.failed(error)) }

    @inlinable func finish(_ final: State) {
        let waiters = state.withLock { s -> [CheckedContinuation<Value, any Error>] in
            guard case .waiting(let waiters) = s.state else { return [] }
            s.state = final
            return Array(waiters.values)
        }
        for waiter in waiters {
            switch final {
            case .open(let value): waiter.resume(returning: value)
            case .failed(let error): waiter.resume(throwing: error)
            case .waiting: break
            }
        }
    }

    @inlinable package func wait() async throws -> Value {
        // Already open (or failed): no suspension, which would put the task back on its executor.
        let (ready, id) = state.withLock { s -> (Result<Value, any Error>?, Int) in
            switch s.state {
            case .open(let value): return (.success(value), 0)
            case .failed(let error): return (.failure(error), 0)
            case .waiting:
                s.nextId += 1
                return (nil, s.nextId)
            }
        }
        if let ready { return try ready.get() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let immediate = state.withLock { s -> Result<Value, any Error>? in
                    switch s.state {
                    case .open(let value): return .success(value)
                    case .failed(let error): return .failure(error)
                    case .waiting(var waiters):
                        if Task.isCancelled { return .failure(CancellationError()) }
                        waiters[id] = continuation
                        s.state = .waiting(waiters)
                        return nil
                    }
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Value, any Error>? in
                guard case .waiting(var waiters) = s.state, let waiter = waiters.removeValue(forKey: id) else { return nil }
                s.state = .waiting(waiters)
                return waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
