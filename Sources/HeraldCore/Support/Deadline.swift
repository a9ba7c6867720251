/// The total deadline of an upstream request (`request_timeout`): `Exceeded` is what a request not
/// answered by it fails with (the transports' timers enforce it, docs/architecture.md, "Deadlines
/// without a timer each").
package enum Deadline {
    package struct Exceeded: Error, CustomStringConvertible, Sendable {
        package let after: Duration
        package init(after: Duration) { self.after = after }
        package var description: String { "no complete answer within \(after)" }
    }
}
