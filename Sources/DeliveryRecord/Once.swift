package import HeraldCore

/// What the dispatcher needs to deliver once (docs/operations.md, "Once"): the gateway's
/// `RepeatGuard` (nil: `notify.repeat_window: 0`), `notify.answer_within`, the deadline the
/// notify route asks the server to answer by (zero: none), and `notify.heard_within`, how soon a
/// 200 must be written for Herald to take it as heard (zero: never).
package struct Once: Sendable {
    package let guardian: RepeatGuard?
    package let answerWithin: Duration
    package let heardWithin: Duration

    package init(guardian: RepeatGuard?, answerWithin: Duration, heardWithin: Duration = .seconds(2)) {
        self.guardian = guardian
        self.answerWithin = answerWithin
        self.heardWithin = heardWithin
    }

    /// The event id Element's push troubleshooter posts in every test push (Element X and Element
    /// Android; MSC4173 describes the practice): each is a push of its own, never a repeat.
    package static let testPushEventId = "$THIS_IS_A_FAKE_EVENT_ID"

    /// Whether an answer written `elapsed` after its request arrived counts as heard: only one
    /// written soon enough that no proxy or homeserver in front of Herald can have given up on it
    /// (docs/operations.md, "Once").
    package func heard(after elapsed: Duration) -> Bool {
        heardWithin > .zero && elapsed <= heardWithin
    }

    /// A joined delivery's outcome. The delivery it joined is bounded by its upstream's deadlines;
    /// the sender's own patience is the route's answer deadline, which the server keeps.
    package func outcome(of flight: ReadinessGate<DeviceOutcome>) async -> DeviceOutcome {
        (try? await flight.wait()) ?? .failed(reason: .answerDeadline)
    }
}
