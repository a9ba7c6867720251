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
