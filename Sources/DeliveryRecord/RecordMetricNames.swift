import HeraldCore

/// The delivery record's metric names (`MetricName`, HeraldCore/Support/MetricName.swift).
extension MetricName {
    package static let notifyRepeatsSuppressed = "herald_notify_repeats_suppressed_total"
    package static let notifyRepeatTakeovers = "herald_notify_repeat_takeovers_total"
    package static let notifyRepeatStoreFallbacks = "herald_notify_repeat_store_fallbacks_total"
}
