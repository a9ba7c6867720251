import HeraldCore

/// What the dispatcher needs to deliver once (docs/operations.md, "Once"): the gateway's
/// `RepeatGuard` (nil: `notify.repeat_window: 0`), and `notify.answer_within`, the deadline the
/// notify route asks the server to answer by (zero: none).
package struct Once: Sendable {
    package let guardian: RepeatGuard?
    package let answerWithin: Duration

    package init(guardian: RepeatGuard?, answerWithin: Duration) {
        self.guardian = guardian
        self.answerWithin = answerWithin
    }

    /// A joined delivery's outcome. The delivery it joined is bounded by its upstream's deadlines;
    /// the sender's own patience is the route's answer deadline, which the server keeps.
    func outcome(of flight: ReadinessGate<DeviceOutcome>) async -> DeviceOutcome {
        (try? await flight.wait()) ?? .failed(reason: .answerDeadline)
    }
}
