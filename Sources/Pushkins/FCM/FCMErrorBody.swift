import HeraldCore
import HeraldUpstream

/// The error body of FCM HTTP v1: `{"error": {"code", "message", "status", "details": [...]}}`.
struct FCMErrorBody {
    var status: String?
    var message: String?
    /// `details[].errorCode` of the FcmError detail, else the google.rpc `status`.
    var code: FCMErrorCode?
    var tokenFieldViolation = false

    init(_ response: UpstreamResponse) {
        guard response.status >= 400, let error = (try? JSONParser.parse(response.body.readableBytesView))?["error"] else { return }
        status = error["status"]?.stringValue
        message = error["message"]?.stringValue
        var codeText: String?
        for detail in error["details"]?.arrayValue ?? [] {
            if let errorCode = detail["errorCode"]?.stringValue { codeText = errorCode }
            for violation in detail["fieldViolations"]?.arrayValue ?? []
            where ["message.token", "message.fid"].contains(violation["field"]?.stringValue) {
                tokenFieldViolation = true
            }
        }
        code = (codeText ?? status).flatMap(FCMErrorCode.init(rawValue:))
    }

    /// An INVALID_ARGUMENT about the registration token or installation id: a field violation of
    /// `message.token` or `message.fid`, or a message naming a registration token.
    var aboutRegistrationToken: Bool {
        tokenFieldViolation || (message?.lowercased().contains("registration token") ?? false)
    }
}
