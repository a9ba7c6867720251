/// What Push Kit's response means for the request (docs/compatibility/hms.md, "Answers"). Every
/// documented code is placed without a `default`: a code added to `HMSResultCode` must be placed
/// here before the code compiles.
package enum HMSDisposition: Sendable, Equatable {
    case delivered
    /// Some tokens were refused (listed); the others were delivered.
    case partial
    /// Every token was refused (listed with reasons, or all of them).
    case allTokensRefused
    /// The credential was refused or expired: renew it and send again, once.
    case renewCredential
    /// Worth another attempt with backoff (Huawei's side, flow control).
    case temporary
    /// The message can never be sent as it is (Herald's bug, or content Huawei refuses).
    case permanent
    /// The app's credentials or permissions are wrong: the operator must act. Never a rejection.
    case configuration

    package static func of(status: Int, code: HMSResultCode?) -> HMSDisposition {
        guard let code else {
            switch status {
            case 200..<300: return .delivered
            case 401: return .renewCredential
            case 403, 404: return .configuration
            case 429, 500...: return .temporary
            default: return .permanent
            }
        }
        switch code {
        case .success: return status >= 500 ? .temporary : .delivered
        case .partialSuccess: return .partial
        case .allTokensInvalid: return .allTokensRefused
        case .authenticationError, .accessTokenExpired, .jwtExpired: return .renewCredential
        case .oauthServiceFailed, .internalError, .testMessagesTooOften: return .temporary
        case .invalidParameters, .tooManyTokensForSysMessage, .invalidMessageStructure, .ttlInThePast, .invalidCollapseKey,
            .sensitiveContent, .tooManyTopicMessages, .invalidMessageBody, .imageNotVerified, .bodyTooLarge, .wrongTokenCount,
            .tooManyTestTokens:
            return status == 503 || status >= 500 ? .temporary : .permanent
        case .appForbidden, .noHighPriorityPermission, .jwtLifetimeTooLong, .sendingPenalised:
            return .configuration
        }
    }
}
