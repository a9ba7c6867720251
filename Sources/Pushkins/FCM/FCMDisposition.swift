package import HeraldCore

/// The error code of an FCM HTTP v1 error answer: `details[].errorCode` of the FcmError detail, or
/// the google.rpc `status` when there is none. An unknown code parses to nil.
package enum FCMErrorCode: String, Sendable, CaseIterable {
    case unspecifiedError = "UNSPECIFIED_ERROR"
    case invalidArgument = "INVALID_ARGUMENT"
    case unregistered = "UNREGISTERED"
    case senderIdMismatch = "SENDER_ID_MISMATCH"
    case quotaExceeded = "QUOTA_EXCEEDED"
    case unavailable = "UNAVAILABLE"
    case `internal` = "INTERNAL"
    case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"
    case notFound = "NOT_FOUND"
    case permissionDenied = "PERMISSION_DENIED"
    case unauthenticated = "UNAUTHENTICATED"
    case resourceExhausted = "RESOURCE_EXHAUSTED"
}

/// An FCM HTTP v1 answer, as a device's outcome carries it. Its pushkin rejects only on
/// `FCMDisposition`'s dead tokens.
package struct FCMReason: ProviderReason, Equatable {
    package let status: Int
    package let code: FCMErrorCode?

    package var label: String { code?.rawValue ?? "http_\(status)" }
    package var description: String { "FCM \(status)" + (code.map { " \($0.rawValue)" } ?? "") }
    package var rejectionMeansDeadToken: Bool { true }
}

extension OutcomeReason {
    /// FCM HTTP v1 answered `status` with `code`.
    package static func fcm(status: Int, _ code: FCMErrorCode?) -> OutcomeReason { .provider(FCMReason(status: status, code: code)) }
}

/// What an FCM HTTP v1 answer means for the device (docs/compatibility/fcm.md). Every error code
/// FCM documents is placed here, so that a code added to `FCMErrorCode` must be placed before the
/// code compiles; the HTTP status decides for the codes whose meaning it carries.
/// A refused access token (401) is renewed and the message sent once more; 429 and 5xx are
/// retried within the budget.
enum FCMDisposition {
    static func of(status: Int, error: FCMErrorBody) -> ResponseDisposition {
        if (200..<300).contains(status) { return .delivered }
        if status == 401 { return .renewCredential }
        if status == 404 { return .deadToken }  // the token is not (or no longer) registered
        let byStatus: ResponseDisposition = status == 429 || status >= 500 ? .temporary : .permanent
        guard let code = error.code else { return byStatus }
        switch code {
        case .unregistered:
            return .deadToken
        case .invalidArgument:
            // Only an argument about the registration token says the token is bad.
            return status == 400 && error.aboutRegistrationToken ? .deadToken : byStatus
        case .unspecifiedError, .senderIdMismatch, .quotaExceeded, .unavailable, .internal, .thirdPartyAuthError, .notFound,
            .permissionDenied, .unauthenticated, .resourceExhausted:
            return byStatus
        }
    }
}
