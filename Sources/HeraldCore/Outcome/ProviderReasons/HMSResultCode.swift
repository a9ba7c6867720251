/// Huawei Push Kit's result `code` (a string of eight digits), for both the Android API (v1) and
/// HarmonyOS's scenario API (v3) (docs/compatibility/hms.md, "Answers"). An unknown code parses to
/// nil and is classified by the HTTP status alone.
package enum HMSResultCode: String, Sendable, CaseIterable {
    case success = "80000000"
    case partialSuccess = "80100000"
    case invalidParameters = "80100001"
    case tooManyTokensForSysMessage = "80100002"
    case invalidMessageStructure = "80100003"
    case ttlInThePast = "80100004"
    case invalidCollapseKey = "80100013"
    case sensitiveContent = "80100016"
    case tooManyTopicMessages = "80100017"
    case invalidMessageBody = "80100018"
    case imageNotVerified = "80100022"
    case authenticationError = "80200001"
    case accessTokenExpired = "80200003"
    case jwtExpired = "80200005"
    case appForbidden = "80300002"
    case allTokensInvalid = "80300007"
    case bodyTooLarge = "80300008"
    case wrongTokenCount = "80300010"
    case noHighPriorityPermission = "80300011"
    case testMessagesTooOften = "80300029"
    case tooManyTestTokens = "80300030"
    case jwtLifetimeTooLong = "80300036"
    case sendingPenalised = "80300037"
    case oauthServiceFailed = "80600003"
    case internalError = "81000001"
}

/// Why HarmonyOS's API (v3) refused one token: the keys of `illegalTokens` in its answer. The
/// Android API lists refused tokens without a reason (`illegalToken`).
package enum HMSTokenReason: String, Sendable, CaseIterable {
    /// The Android API's `illegal_tokens`: invalid, without a reason given.
    case illegalToken
    case tokenFormatError
    case tokenPlatformNotSupport
    case noRight
    case noPushTypeRight
    case atomicUnableSendUnsubscribedMsg
    case countryNotSupport
    case disableSendHuaweiMsgBecauseOfPenalty
    case differentImgVerifyPolicy
    case appinfoError
    case noRightToSendThisLiveNotificationEvent
    case notSupportPlayVoice

    /// Whether the token itself is dead (the homeserver deletes the pusher, Status drops the
    /// registration): a malformed token, one of another platform, one the Android API refused.
    /// `noRight` is a token of another project *or* credentials of another project, so a
    /// rejection on it is decided by the pushkin, which knows whether other tokens succeeded.
    package var tokenIsDead: Bool {
        switch self {
        case .illegalToken, .tokenFormatError, .tokenPlatformNotSupport: return true
        case .noRight, .noPushTypeRight, .atomicUnableSendUnsubscribedMsg, .countryNotSupport, .disableSendHuaweiMsgBecauseOfPenalty,
            .differentImgVerifyPolicy, .appinfoError, .noRightToSendThisLiveNotificationEvent, .notSupportPlayVoice:
            return false
        }
    }
}
