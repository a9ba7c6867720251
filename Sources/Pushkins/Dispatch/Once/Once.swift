import HeraldCore

/// What the dispatcher needs to deliver once and to answer in time (docs/operations.md, "Once"):
/// the gateway's `RepeatGuard` (nil: `notify.repeat_window: 0`), the runner that lets an upstream
/// call outlive its request, and `notify.answer_within`.
package struct Once: Sendable {
    package let guardian: RepeatGuard?
    package let detached: DetachedWork
    package let answerWithin: Duration

    package init(guardian: RepeatGuard?, detached: DetachedWork, answerWithin: Duration) {
        self.guardian = guardian
        self.detached = detached
        self.answerWithin = answerWithin
    }

    /// A joined delivery's outcome, waited for at most `answerWithin`.
    func outcome(of flight: ReadinessGate<DeviceOutcome>) async -> DeviceOutcome {
        await detached.value(within: answerWithin) { (try? await flight.wait()) ?? .failed(reason: .answerDeadline) }
            ?? .failed(reason: .answerDeadline)
    }
}
