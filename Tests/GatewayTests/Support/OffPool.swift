import Foundation

/// Runs `body`, which blocks (a socket read, `waitpid`, a pipe read), on a thread of its own and
/// returns its result: never on a thread of Swift's cooperative pool, which has as many threads as
/// the machine has cores (two in CI) and which the servers and clients of every other test running
/// meanwhile need.
func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}
