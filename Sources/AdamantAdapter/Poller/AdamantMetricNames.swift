import HeraldCore

/// AdamantAdapter's metric names (`MetricName`, HeraldCore/Support/MetricName.swift).
extension MetricName {
    package static let adamantPushes = "herald_adamant_pushes_total"
    package static let adamantPollFailures = "herald_adamant_poll_failures_total"
    package static let adamantPolls = "herald_adamant_polls_total"
    package static let adamantCursorHeight = "herald_adamant_cursor_height"
    package static let adamantHeightLag = "herald_adamant_height_lag"
    package static let adamantSignals = "herald_adamant_signals_total"
    package static let adamantTokensRemoved = "herald_adamant_tokens_removed_total"
    package static let adamantPushesGivenUp = "herald_adamant_pushes_given_up_total"
    package static let adamantNodeFailures = "herald_adamant_node_failures_total"
}
