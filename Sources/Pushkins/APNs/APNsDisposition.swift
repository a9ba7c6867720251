import FoundationEssentials
package import HeraldCore

/// The `reason` of an APNs error answer, as Apple documents them ("Handling notification responses
/// from APNs"). An unknown reason parses to nil and is labelled by its HTTP status.
package enum APNsErrorReason: String, Sendable, CaseIterable {
    case badCollapseId = "BadCollapseId"
    case badDeviceToken = "BadDeviceToken"
    case badExpirationDate = "BadExpirationDate"
    case badMessageId = "BadMessageId"
    case badPriority = "BadPriority"
    case badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case duplicateHeaders = "DuplicateHeaders"
    case idleTimeout = "IdleTimeout"
    case invalidPushType = "InvalidPushType"
    case missingDeviceToken = "MissingDeviceToken"
    case missingTopic = "MissingTopic"
    case payloadEmpty = "PayloadEmpty"
    case topicDisallowed = "TopicDisallowed"
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case expiredProviderToken = "ExpiredProviderToken"
    case forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
    case badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    case expiredToken = "ExpiredToken"
    case unregistered = "Unregistered"
    case payloadTooLarge = "PayloadTooLarge"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case tooManyRequests = "TooManyRequests"
    case internalServerError = "InternalServerError"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"
}

/// An APNs answer, as a device's outcome carries it.
package struct APNsReason: ProviderReason, Equatable {
    package let status: Int
    /// The body's `reason` (nil: none, or one Apple does not document).
    package let reason: APNsErrorReason?
    /// With a 410, the body's `timestamp` (0: none), kept as a plain integer so that the reason
    /// stays within an existential's inline storage: every answer's reason is made, and a larger
    /// one would be boxed on the heap for each.
    private let invalidSinceMillis: Int64

    /// When APNs last confirmed the token was no longer valid for the topic (milliseconds since
    /// 1970), for the trace; not part of the reason's identity.
    package var invalidSince: Int64? { invalidSinceMillis == 0 ? nil : invalidSinceMillis }

    package init(status: Int, reason: APNsErrorReason?, invalidSince: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.invalidSinceMillis = invalidSince ?? 0
    }

    package var label: String { reason?.rawValue ?? "http_\(status)" }
    package var description: String {
        "APNs \(status)" + (reason.map { " \($0.rawValue)" } ?? "")
            + (invalidSince.map {
                "; the token has not been valid since \(Date(timeIntervalSince1970: Double($0) / 1000).formatted(.iso8601))"
            }
                ?? "")
    }

    package static func == (a: APNsReason, b: APNsReason) -> Bool { a.status == b.status && a.reason == b.reason }
    package var rejectionMeansDeadToken: Bool { APNsDisposition.of(status: status, reason: reason) == .deadToken }
}

extension OutcomeReason {
    /// APNs answered `status` with `reason`.
    package static func apns(status: Int, _ reason: APNsErrorReason?, invalidSince: Int64? = nil) -> OutcomeReason {
        .provider(APNsReason(status: status, reason: reason, invalidSince: invalidSince))
    }
}

/// What an APNs answer means for the device (docs/compatibility/apns.md): the one table, which
/// also says which rejections mean a dead token. Apple refusing the provider token (expired or
/// not valid) renews it and sends once more; 429 `TooManyRequests` fails the device at once, so
/// the sender backs off, since an immediate retry would only prolong Apple's throttling.
enum APNsDisposition {
    /// Classifies an answer. Every documented reason is named here, so a new one must be placed.
    static func of(status: Int, reason: APNsErrorReason?) -> ResponseDisposition {
        if (200..<300).contains(status) { return .delivered }
        guard let reason else { return status == 429 ? .throttled : status >= 500 ? .temporary : .permanent }
        switch reason {
        case .badDeviceToken, .deviceTokenNotForTopic:
            return status == 400 ? .deadToken : .permanent
        case .topicDisallowed:
            // The app's topic, not the token; rejected as Sygnal does, and the token kept.
            return status == 400 ? .rejectedForTheApp : .permanent
        case .unregistered, .expiredToken:
            return status == 410 ? .deadToken : .permanent
        case .expiredProviderToken, .invalidProviderToken:
            return status == 403 ? .renewCredential : .permanent
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
