import HeraldCore

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
