package import Foundation
import HeraldCore
import Synchronization

/// A clock that moves only when a test says so (docs/architecture.md, "Time"). Sleepers wake when
/// `advance(by:)` reaches their deadline; `sleepers` says how many wait, so that a test can wait
/// for the code under test to be waiting before it moves time.
package final class ManualClock: HeraldClock {
    private struct Sleeper {
        var id: Int
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var offset: Swift.Duration = .zero
        var sleepers: [Sleeper] = []
        var nextId = 0
        var cancelled: Set<Int> = []
    }
    private let origin = ContinuousClock.now
    private let originDate: Date
    private let state = Mutex(State())

    package init(date: Date = Date(timeIntervalSince1970: 1_800_000_000)) { originDate = date }

    package var now: ContinuousClock.Instant { origin.advanced(by: state.withLock { $0.offset }) }
    package var minimumResolution: Swift.Duration { .nanoseconds(1) }
    package var date: Date { originDate.addingTimeInterval(state.withLock { $0.offset }.seconds) }

    /// How many callers are waiting on this clock.
    package var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Moves time forward and wakes every sleeper whose deadline it reaches.
    package func advance(by duration: Swift.Duration) {
        let woken = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.offset += duration
            let reached = origin.advanced(by: s.offset)
            let due = s.sleepers.filter { $0.deadline <= reached }
            s.sleepers.removeAll { $0.deadline <= reached }
            return due.map(\.continuation)
        }
        for continuation in woken { continuation.resume() }
    }

    package func sleep(until deadline: ContinuousClock.Instant, tolerance: Swift.Duration?) async throws {
        try Task.checkCancellation()
        let id = state.withLock { s -> Int in
            s.nextId += 1
            return s.nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume = state.withLock { s -> Result<Void, any Error>? in
                    if s.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= origin.advanced(by: s.offset) { return .success(()) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                if let index = s.sleepers.firstIndex(where: { $0.id == id }) { return s.sleepers.remove(at: index).continuation }
                s.cancelled.insert(id)
                return nil
            }
            sleeper?.resume(throwing: CancellationError())
        }
    }
}
