/// The names of the metrics Herald exports, one spelling each (docs/operations.md, "Metrics"):
/// the core's here, and each module's in its own extension of this namespace
/// (`…MetricNames.swift`), so that a provider's or a front end's words stay in its module.
/// `MetricNameTests` fails on a metric name spelled anywhere else.
package enum MetricName {
    package static let componentFailing = "herald_component_failing"
    /// Uses of a silent component not tried (`ComponentHealth.Skipped`), by component.
    package static let componentSkipped = "herald_component_skipped_total"
}
