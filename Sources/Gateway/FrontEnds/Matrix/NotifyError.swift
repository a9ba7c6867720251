import HeraldCore
import HeraldHTTPServer
import NIOHTTP1

/// Why a notify request is not a 200.
enum NotifyError: HTTPResponseError {
    /// The body is not JSON: it can never succeed.
    case notJSON(String)
    /// The body is JSON of the wrong shape: it can never succeed.
    case badJSON(String)
    /// Some device failed for now (upstream unavailable, budget spent, in-flight limit): the
    /// homeserver retries the request; the rejections already known are in the body.
    case dispatchFailed(count: Int, first: OutcomeReason, rejected: [String])
    /// Every device that failed did so because its upstream origin is held by pushback, or the
    /// app's `inflight_request_limit` was reached: nothing is wrong but the pace. 429 with
    /// `Retry-After`, so that a push troubleshooter says "try later", not "broken"; Synapse retries
    /// it as it retries a 502 (docs/compatibility/matrix.md).
    case limited(count: Int, first: OutcomeReason, retryAfterSeconds: Int, rejected: [String])
    /// The source sends more notifies than `notify.sources` allows it: 429 with `Retry-After`,
    /// before the body is read.
    case sourceRate(retryAfterSeconds: Int)

    /// `.limited` when every failure is a pause with a known end (pushback, the in-flight limit),
    /// else `.dispatchFailed`. The limit's pause is a second: its slots free as calls end.
    static func failed(_ failures: [OutcomeReason], rejected: [String]) -> NotifyError {
        var seconds = 0
        for failure in failures {
            switch failure {
            case .pushback(let left), .deviceBudget(let left): seconds = max(seconds, left, 1)
            case .inflightLimit, .sourceShare: seconds = max(seconds, 1)
            default: return .dispatchFailed(count: failures.count, first: failures[0], rejected: rejected)
            }
        }
        return .limited(count: failures.count, first: failures[0], retryAfterSeconds: seconds, rejected: rejected)
    }

    var status: HTTPResponseStatus {
        switch self {
        case .notJSON, .badJSON: return .badRequest
        case .dispatchFailed: return .badGateway
        case .limited, .sourceRate: return .tooManyRequests
        }
    }

    var errcode: String {
        switch self {
        case .notJSON: return "M_NOT_JSON"
        case .badJSON: return "M_BAD_JSON"
        case .dispatchFailed: return "M_UNKNOWN"
        case .limited, .sourceRate: return "M_LIMIT_EXCEEDED"
        }
    }

    var message: String {
        switch self {
        case .notJSON(let message), .badJSON(let message): return message
        case .dispatchFailed(0, let first, _): return "Failed to dispatch: \(first)"
        case .dispatchFailed(let count, let first, _): return "Failed to dispatch to \(count) device(s): \(first)"
        case .limited(let count, let first, let seconds, _):
            return "Rate limited: \(count) device(s) not sent yet (\(first)); try again in \(seconds) s"
        case .sourceRate(let seconds):
            return "Rate limited: this sender sends more notifies than the gateway takes from it; try again in \(seconds) s"
        }
    }

    var extraFields: JSONObject {
        switch self {
        case .notJSON, .badJSON: return [:]
        case .dispatchFailed(_, _, let rejected): return ["rejected": .array(rejected.map(JSONValue.string))]
        case .limited(_, _, let seconds, let rejected):
            return ["retry_after_ms": .int(Int64(seconds) * 1000), "rejected": .array(rejected.map(JSONValue.string))]
        case .sourceRate(let seconds): return ["retry_after_ms": .int(Int64(seconds) * 1000)]
        }
    }

    var headers: HTTPHeaders {
        switch self {
        case .limited(_, _, let seconds, _), .sourceRate(let seconds): return ["Retry-After": String(seconds)]
        case .notJSON, .badJSON, .dispatchFailed: return HTTPHeaders()
        }
    }
}
