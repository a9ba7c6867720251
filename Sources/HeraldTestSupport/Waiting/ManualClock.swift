package import Foundation
package import HeraldCore
import NIOCore
import Synchronization

/// A clock that moves only when a test says so (docs/architecture.md, "Time"). Sleepers wake when
/// `advance(by:)` reaches their deadline; `sleepers` says how many wait, so that a test can wait
/// for the code under test to be waiting before it moves time.
///
/// It is the deadlines' clock on event loops too (`loopClock`): a gateway given this clock answers
/// at `answer_within`, ends a request read at `request_read_timeout` and fails an upstream request
/// at `request_timeout` once `advance(by:)` reaches them, and never before.
package final class ManualClock: HeraldClock {
    private struct LoopTask {
        var id: Int
        var due: NIODeadline
        var loop: any EventLoop
        var task: @Sendable () -> Void
    }
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
        var loopTasks: [LoopTask] = []
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

    /// How many timers of event loops wait on this clock (deadlines armed: an answer deadline, a
    /// request read deadline, an upstream request's `request_timeout`).
    package var loopTimers: Int { state.withLock { $0.loopTasks.count } }

    /// How many timers of event loops are due within `duration` from now (not past yet).
    package func loopTimers(dueWithin duration: Swift.Duration) -> Int {
        state.withLock { s in
            let (now, last) = (Self.loopTime(s.offset), Self.loopTime(s.offset + duration))
            return s.loopTasks.count { $0.due > now && $0.due <= last }
        }
    }

    /// How many timers of event loops are due `duration` from now: a deadline of that length
    /// armed since the clock last moved (what a test waits for before it moves time past it).
    package func loopTimers(dueIn duration: Swift.Duration) -> Int {
        state.withLock { s in
            let due = Self.loopTime(s.offset + duration)
            return s.loopTasks.count { $0.due == due }
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline it reaches; the loops' timers it
    /// reaches run on their loops.
    package func advance(by duration: Swift.Duration) {
        let (woken, fired) = state.withLock { s -> ([CheckedContinuation<Void, any Error>], [LoopTask]) in
            s.offset += duration
            let reached = origin.advanced(by: s.offset)
            let due = s.sleepers.filter { $0.deadline <= reached }
            s.sleepers.removeAll { $0.deadline <= reached }
            let loopNow = Self.loopTime(s.offset)
            let fired = s.loopTasks.filter { $0.due <= loopNow }
            s.loopTasks.removeAll { $0.due <= loopNow }
            return (due.map(\.continuation), fired)
        }
        for continuation in woken { continuation.resume() }
        for task in fired { task.loop.execute(task.task) }
    }

    package var loopClock: any LoopClock { ManualLoopClock(clock: self) }

    /// The loops' time at `offset` past this clock's start: a day in, so that a deadline before
    /// the start is still a time.
    fileprivate static func loopTime(_ offset: Swift.Duration) -> NIODeadline {
        let (seconds, attoseconds) = offset.components
        return .uptimeNanoseconds(UInt64(86_400_000_000_000 + max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)))
    }

    fileprivate var loopNow: NIODeadline { Self.loopTime(state.withLock { $0.offset }) }

    fileprivate func schedule(at due: NIODeadline, on loop: any EventLoop, _ task: @escaping @Sendable () -> Void) -> LoopClockTimer {
        let id = state.withLock { s -> Int? in
            guard due > Self.loopTime(s.offset) else { return nil }
            s.nextId += 1
            s.loopTasks.append(LoopTask(id: s.nextId, due: due, loop: loop, task: task))
            return s.nextId
        }
        guard let id else {
            loop.execute(task)
            return LoopClockTimer(cancel: {})
        }
        return LoopClockTimer(cancel: { [weak self] in self?.state.withLock { $0.loopTasks.removeAll { $0.id == id } } })
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

/// A `ManualClock` as the deadlines' clock on event loops.
private struct ManualLoopClock: LoopClock {
    let clock: ManualClock

    func now(on loop: any EventLoop) -> NIODeadline { clock.loopNow }

    func schedule(at deadline: NIODeadline, on loop: any EventLoop, _ task: @escaping @Sendable () -> Void) -> LoopClockTimer {
        clock.schedule(at: deadline, on: loop, task)
    }
}
