import HeraldCore

/// Pushkins's metric names (`MetricName`, HeraldCore/Support/MetricName.swift).
extension MetricName {
    package static let inflightRequestLimitDrop = "sygnal_inflight_request_limit_drop_total"
    package static let perPushkinType = "sygnal_per_pushkin_type_total"
    package static let rejectedPushkeys = "herald_rejected_pushkeys_total"
    package static let failedDevices = "herald_failed_devices_total"
    package static let deviceOutcomes = "herald_device_outcomes_total"
    package static let apnsQueueTime = "sygnal_apns_queue_time"
    package static let pendingAPNsRequests = "sygnal_pending_apns_requests"
    package static let clientCertExpiry = "sygnal_client_cert_expiry"
    package static let endpointRefusals = "herald_endpoint_refusals_total"
    /// Notifies or devices refused because their source had its share or its rate:
    /// `{reason="share|rate"}` (docs/operations.md, "Sources"; no address in a label). A device past
    /// its own budget is counted in `herald_device_outcomes_total{reason="device_budget"}`.
    package static let sourceLimited = "herald_source_limited_total"
}
