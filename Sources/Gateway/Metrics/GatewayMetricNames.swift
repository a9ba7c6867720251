import HeraldCore

/// Gateway's metric names (`MetricName`, HeraldCore/Support/MetricName.swift).
extension MetricName {
    package static let notificationsReceived = "sygnal_notifications_received_total"
    package static let notificationsDevicesReceived = "sygnal_notifications_devices_received_total"
    package static let requestsInFlight = "sygnal_requests_in_flight"
    package static let buildInfo = "herald_build_info"
    package static let pushgatewayStatusCodes = "sygnal_pushgateway_status_codes_total"
    package static let notifyTime = "sygnal_notify_time"
    package static let relayRequests = "herald_relay_requests_total"
}
