package import NIOCore

/// Where a channel handler's deadlines read the time and schedule their one timer (`LoopTimer`):
/// the event loop's own clock in Herald, a test's manual clock in tests (docs/architecture.md,
/// "Time"). The answer deadline, the request read deadline and the upstreams' `request_timeout`
/// run on it, so that a test of a deadline moves time instead of waiting for it.
package protocol LoopClock: Sendable {
    /// The time on `loop`'s clock.
    func now(on loop: any EventLoop) -> NIODeadline
    /// Runs `task` on `loop` once this clock reaches `deadline`.
    func schedule(at deadline: NIODeadline, on loop: any EventLoop, _ task: @escaping @Sendable () -> Void) -> LoopClockTimer
}

extension LoopClock {
    /// Runs `task` on `loop` once `delay` has passed on this clock.
    package func schedule(in delay: TimeAmount, on loop: any EventLoop, _ task: @escaping @Sendable () -> Void) -> LoopClockTimer {
        schedule(at: now(on: loop) + delay, on: loop, task)
    }
}

/// A task a `LoopClock` scheduled, which can be cancelled until it runs.
package struct LoopClockTimer: Sendable {
    private enum Kind: Sendable {
        case loop(Scheduled<Void>)
        case other(@Sendable () -> Void)
    }
    private let kind: Kind

    package init(_ scheduled: Scheduled<Void>) { kind = .loop(scheduled) }
    /// A timer of another clock, cancelled by `cancel`.
    package init(cancel: @escaping @Sendable () -> Void) { kind = .other(cancel) }

    package func cancel() {
        switch kind {
        case .loop(let scheduled): scheduled.cancel()
        case .other(let cancel): cancel()
        }
    }
}

/// The event loop's own clock: what every `LoopClock` of Herald is.
package struct EventLoopClock: LoopClock {
    package init() {}

    package func now(on loop: any EventLoop) -> NIODeadline { loop.now }

    package func schedule(at deadline: NIODeadline, on loop: any EventLoop, _ task: @escaping @Sendable () -> Void) -> LoopClockTimer {
        LoopClockTimer(loop.scheduleTask(deadline: deadline, task))
    }
}
