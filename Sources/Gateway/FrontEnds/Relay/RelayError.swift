import HeraldHTTPServer
import NIOHTTP1

/// Why the relay does not answer 201. Statuses follow what senders do with them: Mastodon deletes
/// a subscription on a 4xx other than 408 and 429, so a 4xx means the subscription or message is
/// bad for good, and Herald's own or Apple's problems are 5xx (docs/webpush-relay.md, "Answers").
enum RelayError: HTTPResponseError, Equatable {
    case unknownEnvironment(String)
    case badDeviceToken
    case unsupportedEncoding(String)
    case malformedHeader(String)
    case malformedBody(String)
    case tooLarge(Int)
    /// APNs says the device token is dead: the sender deletes the subscription.
    case gone
    /// Too many messages for this device token, here or at APNs.
    case rateLimited(retryAfter: Int)
    /// APNs refused for a reason of Herald's configuration (403, topic errors): not the sender's fault.
    case upstreamRefused(String)
    /// APNs unavailable or unreachable after the retry budget: try again later.
    case upstreamUnavailable(retryAfter: Int)

    var status: HTTPResponseStatus {
        switch self {
        case .unknownEnvironment: return .notFound
        case .badDeviceToken, .malformedHeader, .malformedBody: return .badRequest
        case .unsupportedEncoding: return .unsupportedMediaType
        case .tooLarge: return .payloadTooLarge
        case .gone: return .gone
        case .rateLimited: return .tooManyRequests
        case .upstreamRefused: return .badGateway
        case .upstreamUnavailable: return .serviceUnavailable
        }
    }

    var errcode: String { "M_RELAY" }

    var message: String {
        switch self {
        case .unknownEnvironment(let name): return "Unknown environment '\(name)': use production or development"
        case .badDeviceToken: return "The device token must be 64 to 200 hexadecimal characters"
        case .unsupportedEncoding(let value): return "Unsupported Content-Encoding: \(value) (aesgcm or aes128gcm)"
        case .malformedHeader(let why), .malformedBody(let why): return why
        case .tooLarge(let limit): return "The message does not fit in an APNs payload of \(limit) bytes"
        case .gone: return "The device token is no longer valid"
        case .rateLimited: return "Too many messages for this device; retry later"
        case .upstreamRefused(let why): return "APNs refused the message: \(why)"
        case .upstreamUnavailable: return "APNs is unavailable; retry later"
        }
    }

    var headers: HTTPHeaders {
        switch self {
        case .rateLimited(let seconds), .upstreamUnavailable(let seconds):
            var headers = HTTPHeaders()
            headers.add(name: "Retry-After", value: String(seconds))
            return headers
        default: return HTTPHeaders()
        }
    }

    /// A short label for `herald_relay_requests_total{result}`.
    var label: String {
        switch self {
        case .unknownEnvironment, .badDeviceToken, .malformedHeader, .malformedBody: return "bad_request"
        case .unsupportedEncoding: return "unsupported_encoding"
        case .tooLarge: return "too_large"
        case .gone: return "gone"
        case .rateLimited: return "rate_limited"
        case .upstreamRefused: return "upstream_refused"
        case .upstreamUnavailable: return "upstream_unavailable"
        }
    }
}
