import Synchronization

/// A counting semaphore for async code: at most `limit` holders at once, the others wait in
/// order. Used to cap the streams in flight on one APNs connection.
public final class AsyncLimiter: Sendable {
    public let limit: Int
    private struct State {
        var held = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    public init(limit: Int) { self.limit = max(1, limit) }

    public var inUse: Int { state.withLock { $0.held } }

    public func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { s -> Bool in
                if s.held < limit {
                    s.held += 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    public func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.held -= 1
                return nil
            }
            return s.waiters.removeFirst()  // the slot passes straight to the next waiter
        }
        next?.resume()
    }

    public func withPermit<T>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }
}
