import HeraldCore

/// What a push service's refusal says the request lacks: a Web Push service (a UnifiedPush
/// distributor among them) refuses a push without `TTL` (Mozilla's autopush: 400, errno 111), a
/// body that is not encrypted (400, errno 110), or one without the VAPID `Authorization` a
/// restricted subscription needs (401 or 403). Each is counted under its own reason, logged once
/// per origin with the fix, and shown in the delivery trace with the service's own words.
package enum PushServiceRequirement: String, Sendable, Equatable {
    case ttl = "needs_ttl"
    case encryption = "needs_encryption"
    case vapid = "needs_vapid"

    /// The requirement a refusal names, or nil for any other answer.
    static func of(status: Int, body: String) -> PushServiceRequirement? {
        let errno: Int64? =
            if case .int(let n)? = (try? JSONParser.parse(Array(body.utf8)))?["errno"] { n } else { nil }
        let text = body.lowercased()
        switch status {
        case 400:
            if errno == 111 || text.contains("ttl") { return .ttl }
            if errno == 110 || text.contains("encrypt") || text.contains("content-encoding") { return .encryption }
            return nil
        case 401, 403:
            // Apple's "BadJwtToken" is about the subject, not a missing key: said elsewhere.
            if text.contains("badjwttoken") { return nil }
            if errno == 109 || text.contains("vapid") || text.contains("jwt") || text.contains("authorization") { return .vapid }
            return nil
        default:
            return nil
        }
    }

    /// What the operator, or the client's developer, does about it.
    var fix: String {
        switch self {
        case .ttl:
            return
                "the push service requires a TTL header (RFC 8030 §5.2); Herald sends the app's ttl: check that no proxy between them removes it"
        case .encryption:
            return
                "this distributor needs encrypted Web Push: the client must give its subscription's keys (data.p256dh and data.auth) in its pusher, or be served as a webpush app (docs/compatibility/unifiedpush.md)"
        case .vapid:
            return
                "this distributor needs a VAPID Authorization: set vapid_private_key and vapid_contact_email on the app, and give the client its public key (herald vapid-key) to register with"
        }
    }

    /// The reason's words in the trace.
    var summary: String {
        switch self {
        case .ttl: return "a TTL header is required"
        case .encryption: return "an encrypted (aes128gcm) body is required"
        case .vapid: return "a VAPID Authorization is required"
        }
    }

    /// A push service's own text, as a log line or a trace may carry it: at most 200 characters,
    /// control characters made spaces.
    static func said(_ body: String) -> String {
        String(body.prefix(200).map { $0.isASCII && ($0.asciiValue ?? 0) < 0x20 ? " " : $0 })
    }
}
