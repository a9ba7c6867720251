import Synchronization

/// A flag that fires once: for a line that is worth logging the first time only (a
/// configuration problem every request would otherwise repeat).
package final class OneTimeFlag: Sendable {
    private let fired = Atomic(false)

    package init() {}

    /// True the first time it is asked, false ever after.
    package func fire() -> Bool { !fired.exchange(true, ordering: .relaxed) }

    package var hasFired: Bool { fired.load(ordering: .relaxed) }
}
