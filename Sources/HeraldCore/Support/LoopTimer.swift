package import NIOCore

/// One timer on an event loop for many deadlines, instead of a timer for each (docs/architecture.md,
/// "Deadlines without a timer each"). Its owner notes each deadline where it keeps its work and
/// arms this timer by it; when the timer fires, the owner ends what is due and arms the timer again
/// by the earliest deadline left, if any. A deadline met costs a clock read, not a task scheduled
/// on the loop and cancelled. Touched only on its loop.
package struct LoopTimer {
    private var scheduled: Scheduled<Void>?
    /// When the armed timer fires.
    private var due: NIODeadline?

    package init() {}

    /// Makes sure the timer fires by `deadline`: armed if it is not, armed earlier if it would fire
    /// later. `fire` is made only then (a deadline after the armed one costs a comparison).
    package mutating func arm(by deadline: NIODeadline, on loop: any EventLoop, _ fire: () -> @Sendable () -> Void) {
        if let due, due <= deadline { return }
        scheduled?.cancel()
        due = deadline
        scheduled = loop.scheduleTask(deadline: deadline, fire())
    }

    /// The timer fired: it is armed no more. Its owner calls this first when it fires.
    package mutating func fired() {
        scheduled = nil
        due = nil
    }

    package mutating func cancel() {
        scheduled?.cancel()
        fired()
    }
}
