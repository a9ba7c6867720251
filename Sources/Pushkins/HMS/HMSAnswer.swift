import HeraldCore

/// What Push Kit answered (docs/compatibility/hms.md, "Answers"):
/// `{"code": "80000000", "msg": "…", "requestId": "…"}`, where `code` is a string and `msg`, for a
/// partial success or refused tokens, is itself a JSON document: the Android API's
/// `{"success":1,"failure":1,"illegal_tokens":["…"]}`, HarmonyOS's
/// `{"illegalTokens":{"<reason>":["…"]},"failure":1}`. Anything else (plain text, no body) parses
/// to no code and no refused tokens: the HTTP status then decides.
package struct HMSAnswer: Sendable, Equatable {
    package var code: HMSResultCode?
    /// The code as sent, for logs (an unknown one included).
    package var rawCode: String?
    package var requestId: String?
    /// The tokens Huawei refused, with why.
    package var refused: [String: HMSTokenReason]

    package init(code: HMSResultCode? = nil, rawCode: String? = nil, requestId: String? = nil, refused: [String: HMSTokenReason] = [:]) {
        self.code = code
        self.rawCode = rawCode
        self.requestId = requestId
        self.refused = refused
    }

    package static func parse(_ body: [UInt8]) -> HMSAnswer {
        guard case .object(let json)? = try? JSONParser.parse(body) else { return HMSAnswer() }
        var answer = HMSAnswer()
        switch json["code"] {
        case .string(let code)?: answer.rawCode = code
        case .int(let code)?: answer.rawCode = String(code)
        default: break
        }
        answer.code = answer.rawCode.flatMap(HMSResultCode.init(rawValue:))
        answer.requestId = json["requestId"]?.stringValue
        if let text = json["msg"]?.stringValue, text.hasPrefix("{"), case .object(let detail)? = try? JSONParser.parse(Array(text.utf8)) {
            answer.refused = refusedTokens(detail)
        } else if case .object(let detail)? = json["msg"] {
            answer.refused = refusedTokens(detail)
        }
        return answer
    }

    private static func refusedTokens(_ detail: JSONObject) -> [String: HMSTokenReason] {
        var refused: [String: HMSTokenReason] = [:]
        for token in detail["illegal_tokens"]?.arrayValue ?? [] {
            if let token = token.stringValue { refused[token] = .illegalToken }
        }
        if case .object(let byReason)? = detail["illegalTokens"] {
            for (reason, tokens) in byReason {
                // A reason Huawei adds later is not a dead token until it is known to be one.
                let known = HMSTokenReason(rawValue: reason) ?? .noPushTypeRight
                for token in tokens.arrayValue ?? [] {
                    if let token = token.stringValue { refused[token] = known }
                }
            }
        } else if case .array(let tokens)? = detail["illegalTokens"] {
            for token in tokens { if let token = token.stringValue { refused[token] = .illegalToken } }
        }
        return refused
    }
}

/// What an answer means for the request (docs/compatibility/hms.md, "Answers"). Every documented
/// code is placed without a `default`: a code added to `HMSResultCode` must be placed here before
/// the code compiles.
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
