import HeraldCore

/// What an FCM HTTP v1 answer means for the device (docs/compatibility/fcm.md). Every error code
/// FCM documents is placed here, so that a code added to `FCMErrorCode` must be placed before the
/// code compiles; the HTTP status decides for the codes whose meaning it carries.
enum FCMDisposition: Equatable {
    case delivered
    /// The registration token is dead: the pushkey is rejected.
    case deadToken
    /// The access token was refused: renew it and retry once.
    case renewAccessToken
    /// Worth retrying within the budget (429, 5xx).
    case temporary
    /// Retrying cannot help this request; the device fails.
    case permanent

    static func of(status: Int, error: FCMErrorBody) -> FCMDisposition {
        if (200..<300).contains(status) { return .delivered }
        if status == 401 { return .renewAccessToken }
        if status == 404 { return .deadToken }  // the token is not (or no longer) registered
        let byStatus: FCMDisposition = status == 429 || status >= 500 ? .temporary : .permanent
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
