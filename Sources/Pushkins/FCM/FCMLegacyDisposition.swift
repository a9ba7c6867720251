package import HeraldCore

/// A per-device error of the legacy FCM API (`results[].error`), or nil for one not listed.
package enum FCMLegacyError: String, Sendable, CaseIterable {
    case missingRegistration = "MissingRegistration"
    case invalidRegistration = "InvalidRegistration"
    case notRegistered = "NotRegistered"
    case invalidPackageName = "InvalidPackageName"
    case mismatchSenderId = "MismatchSenderId"
    case messageTooBig = "MessageTooBig"
    case invalidDataKey = "InvalidDataKey"
    case invalidTtl = "InvalidTtl"
    case unavailable = "Unavailable"
    case internalServerError = "InternalServerError"
    case deviceMessageRateExceeded = "DeviceMessageRateExceeded"
    case topicsMessageRateExceeded = "TopicsMessageRateExceeded"
    case invalidApnsCredential = "InvalidApnsCredential"
}

/// An answer of the legacy FCM API: a device's `results[].error`, or the status of the whole
/// request.
package struct FCMLegacyReason: ProviderReason, Equatable {
    package let error: FCMLegacyError?
    package let status: Int

    package var label: String { error?.rawValue ?? "http_\(status)" }
    package var description: String { error.map { "FCM \($0.rawValue)" } ?? "FCM \(status)" }
    package var rejectionMeansDeadToken: Bool { true }
}

extension OutcomeReason {
    /// The legacy FCM API answered this per-device error, or `status` for the whole request.
    package static func fcmLegacy(_ error: FCMLegacyError?, status: Int) -> OutcomeReason {
        .provider(FCMLegacyReason(error: error, status: status))
    }
}

extension FCMLegacyError {
    /// What a per-device error means: every listed error is placed here.
    var disposition: FCMLegacyDisposition {
        switch self {
        case .missingRegistration, .invalidRegistration, .notRegistered, .invalidPackageName, .mismatchSenderId: return .deadToken
        case .messageTooBig, .invalidDataKey, .invalidTtl: return .dropped
        case .unavailable, .internalServerError, .deviceMessageRateExceeded, .topicsMessageRateExceeded, .invalidApnsCredential:
            return .retry
        }
    }
}

enum FCMLegacyDisposition {
    case deadToken
    case dropped
    case retry
}
