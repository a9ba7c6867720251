package import HeraldCore

/// HeraldUpstream's metric names (`MetricName`, HeraldCore/Support/MetricName.swift).
extension MetricName {
    package static let upstreamResentUnanswered = "herald_upstream_resent_unanswered_total"
    package static let upstreamCredentialsRefused = "herald_upstream_credentials_refused_total"
    /// `sygnal_<type>_request_time`: the time of each upstream request of a pushkin type.
    package static func requestTime(_ type: PushkinType) -> String { "sygnal_\(type)_request_time" }
    /// `sygnal_active_<type>_requests`: the upstream requests of a pushkin type under way.
    package static func activeRequests(_ type: PushkinType) -> String { "sygnal_active_\(type)_requests" }
    /// `sygnal_<type>_status_codes_total`: the upstream's answers by status code.
    package static func statusCodes(_ type: PushkinType) -> String { "sygnal_\(type)_status_codes_total" }
}

extension MetricName {
    /// Seconds of holds an upstream origin asked for (docs/operations.md, "Pushback").
    package static let upstreamPushbackSeconds = "herald_upstream_pushback_seconds_total"
}
