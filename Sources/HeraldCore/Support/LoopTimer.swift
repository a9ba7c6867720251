package import NIOCore

/// One timer on an event loop for many deadlines, instead of a timer for each (docs/architecture.md,
/// "Deadlines without a timer each"). Its owner (`LoopTimerOwner`) notes each deadline where it
/// keeps its work and arms this timer by it; when the timer fires, the owner ends what is due and
/// says the earliest deadline left, by which the timer is armed again. A deadline met costs a
/// clock read, not a task scheduled on the loop and cancelled. Touched only on its loop.
///
/// Its time is its `clock`'s (`LoopClock`): the owner reads `now(context)` from it, not the loop's
/// own clock, so that a test's manual clock moves every deadline the timer keeps.
package struct LoopTimer {
    private var scheduled: LoopClockTimer?
    /// When the armed timer fires.
    private var due: NIODeadline?
    /// What the deadlines are dated and the timer scheduled by.
    package let clock: any LoopClock

    package init(clock: any LoopClock) { self.clock = clock }

    /// The time on `loop`, by this timer's clock.
    package func now(_ loop: any EventLoop) -> NIODeadline { clock.now(on: loop) }

    /// Makes sure the timer fires by `deadline`: armed if it is not, armed earlier if it would fire
    /// later. `fire` is made only then (a deadline after the armed one costs a comparison).
    fileprivate mutating func arm(by deadline: NIODeadline, on loop: any EventLoop, _ fire: () -> @Sendable () -> Void) {
        if let due, due <= deadline { return }
        scheduled?.cancel()
        due = deadline
        scheduled = clock.schedule(at: deadline, on: loop, fire())
    }

    /// The timer fired: it is armed no more.
    fileprivate mutating func fired() {
        scheduled = nil
        due = nil
    }

    /// Disarms the timer (its owner's connection is gone).
    package mutating func cancel() {
        scheduled?.cancel()
        fired()
    }
}

/// A channel handler with one `LoopTimer`. The timer's routine is here, once: `armTimer` arms it,
/// and when it fires it calls `timerFired` and is armed again by the deadline that returns.
package protocol LoopTimerOwner: AnyObject, SendableMetatype {
    var timer: LoopTimer { get set }
    /// Ends what is due at `timer.now(context.eventLoop)`; the earliest deadline left, nil for none.
    func timerFired(context: ChannelHandlerContext) -> NIODeadline?
}

extension LoopTimerOwner {
    /// Makes sure `timerFired` runs by `deadline`, on `context`'s loop.
    package func armTimer(by deadline: NIODeadline, context: ChannelHandlerContext) {
        timer.arm(by: deadline, on: context.eventLoop) {
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            return {
                let (owner, context) = bound.value
                owner.fireTimer(context: context)
            }
        }
    }

    private func fireTimer(context: ChannelHandlerContext) {
        timer.fired()
        if let next = timerFired(context: context) { armTimer(by: next, context: context) }
    }
}
