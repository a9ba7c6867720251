import HeraldCore

/// StatusAdapter's metric names (`MetricName`, HeraldCore/Support/MetricName.swift).
extension MetricName {
    package static let statusRegistrations = "herald_status_registrations_total"
    package static let statusPushRequests = "herald_status_push_requests_total"
    package static let gorushJobsSentAgain = "herald_gorush_jobs_sent_again_total"
    package static let gorushQueueJobs = "herald_gorush_queue_jobs"
    package static let gorushQueueBytes = "herald_gorush_queue_bytes"
}
