import HeraldCore

/// The body of Push Kit's response (docs/compatibility/hms.md, "Answers"):
/// `{"code": "80000000", "msg": "…", "requestId": "…"}`, where `code` is a string and `msg`, for a
/// partial success or refused tokens, is itself a JSON document: the Android API's
/// `{"success":1,"failure":1,"illegal_tokens":["…"]}`, HarmonyOS's
/// `{"illegalTokens":{"<reason>":["…"]},"failure":1}`. Anything else (plain text, no body) parses
/// to no code and no refused tokens: the HTTP status then decides.
package struct HMSResponseBody: Sendable, Equatable {
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

    package static func parse(_ body: [UInt8]) -> HMSResponseBody {
        guard case .object(let json)? = try? JSONParser.parse(body) else { return HMSResponseBody() }
        var answer = HMSResponseBody()
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
