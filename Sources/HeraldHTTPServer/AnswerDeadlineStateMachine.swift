/// The answer deadline of the request a connection is handling (docs/architecture.md, "Answer
/// deadline"), as a value: whether its timer runs, whether the server answered at the deadline (and
/// with what), or whether the handler's answer claimed the connection first. `ConnectionHandler`
/// schedules the timer on the connection's event loop and asks this what each event means, so the
/// race between the two answers is tested without a socket (`AnswerDeadlineStateMachineTests`).
struct AnswerDeadlineStateMachine<Answer> {
    enum State {
        /// No request with a deadline is being answered.
        case idle
        /// The timer runs.
        case armed
        /// The deadline passed first: the server wrote this answer, and the handler's is not written.
        case answeredAtDeadline(Answer)
        /// The handler's answer is being written: the deadline can no longer answer.
        case claimed
    }

    private(set) var state = State.idle

    /// A request with a deadline was handed out: arm the timer.
    mutating func start() { state = .armed }

    /// The timer fired while the request is still `responding` (not answered, connection open):
    /// true when the server writes `answer` now.
    mutating func fired(answering answer: Answer, responding: Bool) -> Bool {
        guard case .armed = state, responding else { return false }
        state = .answeredAtDeadline(answer)
        return true
    }

    /// The handler's answer is about to be written on a connection that is `open`: true when its
    /// sender will hear it. Cancel the timer either way.
    mutating func claim(open: Bool) -> Bool {
        if case .answeredAtDeadline = state { return false }
        state = .claimed
        return open
    }

    /// The handler answered: the answer the server wrote at the deadline, if it did (the handler's
    /// is then not written). The deadline is over either way; cancel the timer.
    mutating func respond() -> Answer? {
        defer { state = .idle }
        if case .answeredAtDeadline(let early) = state { return early }
        return nil
    }
}
