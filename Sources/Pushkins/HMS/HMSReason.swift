package import HeraldCore

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

/// A Huawei Push Kit answer, as a device's outcome carries it: the status, the result `code`, and
/// for one token of the request, why it was refused. The pushkin rejects only what its table
/// (`HMSPushkin.outcome`) decided is dead, so a rejection for this reason always is.
package struct HMSReason: ProviderReason, Equatable {
    package let status: Int
    package let code: HMSResultCode?
    package let token: HMSTokenReason?

    package var label: String { token?.rawValue ?? code.map { "hms_\($0.rawValue)" } ?? "http_\(status)" }
    package var description: String {
        "Huawei \(status)" + (code.map { " \($0.rawValue)" } ?? "") + (token.map { " \($0.rawValue)" } ?? "")
    }
    package var rejectionMeansDeadToken: Bool { true }
}

extension OutcomeReason {
    /// Huawei Push Kit answered `status` with result `code`, and for one token, why it was refused.
    package static func hms(status: Int, _ code: HMSResultCode?, _ token: HMSTokenReason?) -> OutcomeReason {
        .provider(HMSReason(status: status, code: code, token: token))
    }
}
