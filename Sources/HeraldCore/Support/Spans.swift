import Synchronization

/// Whether spans are recorded: set once, when the gateway bootstraps a tracer (`tracing:`,
/// docs/operations.md "Tracing"). Without one, the request paths skip `withSpan` altogether: even
/// the no-op tracer's span costs a name built, a lookup of the tracer and a task-local context
/// bound, for the request, each device and each upstream attempt.
package enum Spans {
    private static let recording = Atomic<Bool>(false)

    package static var enabled: Bool { recording.load(ordering: .relaxed) }

    /// Called by the gateway after `InstrumentationSystem.bootstrap`.
    package static func enable() { recording.store(true, ordering: .relaxed) }
}
