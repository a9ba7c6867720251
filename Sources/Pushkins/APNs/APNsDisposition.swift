import HeraldCore

/// What an APNs answer means for the device (docs/compatibility/apns.md).
enum APNsDisposition: Equatable {
    case delivered
    /// The device token is dead: the pushkey is rejected.
    case deadToken
    /// Apple refused the provider token (expired, or not valid): it is dropped at once, and the
    /// request sent again once with a new one.
    case refreshProviderToken
    /// Too many pushes to this device token (429 `TooManyRequests`): the device fails at once, so the
    /// sender backs off; an immediate retry would only prolong Apple's throttling.
    case throttled
    /// Worth retrying within the budget (5xx, a provider token updated too often).
    case temporary
    /// Retrying cannot help this request; the device fails (configuration or request problem).
    case permanent

    /// Classifies an answer. Every documented reason is named here, so a new one must be placed.
    static func of(status: Int, reason: APNsErrorReason?) -> APNsDisposition {
        if (200..<300).contains(status) { return .delivered }
        guard let reason else { return status == 429 ? .throttled : status >= 500 ? .temporary : .permanent }
        switch reason {
        case .badDeviceToken, .deviceTokenNotForTopic, .topicDisallowed:
            return status == 400 ? .deadToken : .permanent
        case .unregistered, .expiredToken:
            return status == 410 ? .deadToken : .permanent
        case .expiredProviderToken, .invalidProviderToken:
            return status == 403 ? .refreshProviderToken : .permanent
        case .tooManyRequests:
            return .throttled
        case .tooManyProviderTokenUpdates, .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout:
            return .temporary
        case .badCollapseId, .badExpirationDate, .badMessageId, .badPriority, .badTopic, .duplicateHeaders, .invalidPushType,
            .missingDeviceToken, .missingTopic, .payloadEmpty, .badCertificate, .badCertificateEnvironment, .forbidden,
            .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badPath,
            .methodNotAllowed, .payloadTooLarge:
            return status == 429 ? .throttled : status >= 500 ? .temporary : .permanent
        }
    }
}
