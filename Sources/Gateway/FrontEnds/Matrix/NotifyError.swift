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

    var status: HTTPResponseStatus {
        switch self {
        case .notJSON, .badJSON: return .badRequest
        case .dispatchFailed: return .badGateway
        }
    }

    var errcode: String {
        switch self {
        case .notJSON: return "M_NOT_JSON"
        case .badJSON: return "M_BAD_JSON"
        case .dispatchFailed: return "M_UNKNOWN"
        }
    }

    var message: String {
        switch self {
        case .notJSON(let message), .badJSON(let message): return message
        case .dispatchFailed(0, let first, _): return "Failed to dispatch: \(first)"
        case .dispatchFailed(let count, let first, _): return "Failed to dispatch to \(count) device(s): \(first)"
        }
    }

    var extraFields: JSONObject {
        guard case .dispatchFailed(_, _, let rejected) = self else { return [:] }
        return ["rejected": .array(rejected.map(JSONValue.string))]
    }
}
