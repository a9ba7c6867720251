import NIOCore

/// The answer deadline of the request a connection is handling (docs/architecture.md, "Answer
/// deadline"), as a value: when it is due, whether the server answered at the deadline (and with
/// what), or whether the handler's answer claimed the connection first. `ConnectionHandler` keeps
/// one `LoopTimer` per connection on its event loop and asks this what each event means, so the
/// race between the two answers, and the timer's re-arming for a later request, are tested without
/// a socket (`AnswerDeadlineStateMachineTests`). A request answered in time costs no timer of its
/// own: the timer armed by an earlier request finds the later one not due and is armed again once.
struct AnswerDeadlineStateMachine<Answer> {
    enum State {
        /// No request with a deadline is being answered.
        case idle
        /// A request is being answered, due at this time (the event loop's clock).
        case armed(due: NIODeadline)
        /// The deadline passed first: the server wrote this answer, and the handler's is not written.
        case answeredAtDeadline(Answer)
        /// The handler's answer is being written: the deadline can no longer answer.
        case claimed
    }

    private(set) var state = State.idle

    /// A request with a deadline was handed out, due at `due`: make sure the timer fires by then.
    mutating func start(due: NIODeadline) -> NIODeadline {
        state = .armed(due: due)
        return due
    }

    enum TimerAction {
        case none
        /// The request is not due yet: arm the timer again by its time.
        case rearm(NIODeadline)
        /// Its time passed: the server writes this answer now, and the connection closes after it.
        case answer(Answer)
    }

    /// The timer fired at `now` while the request is still `responding` (not answered, connection
    /// open); `answer` makes the server's answer, only when it is written.
    mutating func timerFired(now: NIODeadline, responding: Bool, answer: () -> Answer) -> TimerAction {
        guard case .armed(let due) = state, responding else { return .none }
        guard now >= due else { return .rearm(due) }
        let made = answer()
        state = .answeredAtDeadline(made)
        return .answer(made)
    }

    /// The handler's answer is about to be written on a connection that is `open`: true when its
    /// sender will hear it.
    mutating func claim(open: Bool) -> Bool {
        if case .answeredAtDeadline = state { return false }
        state = .claimed
        return open
    }

    /// The handler answered: the answer the server wrote at the deadline, if it did (the handler's
    /// is then not written). The deadline is over either way.
    mutating func respond() -> Answer? {
        defer { state = .idle }
        if case .answeredAtDeadline(let early) = state { return early }
        return nil
    }
}
