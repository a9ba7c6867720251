import HeraldCore
import HeraldHTTPServer

/// The Matrix push gateway API's errors, and those of Herald's own routes (`/health`):
/// `{"errcode": …, "error": …, …extra}`. The server's own errors get the codes the Matrix spec
/// uses (`M_UNRECOGNIZED` for an unknown path or method, as the spec asks, where Sygnal sends
/// HTML pages).
struct MatrixErrors: ErrorRenderer {
    func render(_ error: any HTTPResponseError) -> ServerResponse {
        var body: JSONObject = ["errcode": .string(Self.errcode(of: error)), "error": .string(error.message)]
        for (key, value) in error.extraFields { body[key] = value }
        var response = ServerResponse.json(error.status, .object(body))
        for (name, value) in error.headers { response.headers.add(name: name, value: value) }
        return response
    }

    static func errcode(of error: any HTTPResponseError) -> String {
        guard let error = error as? ServerError else { return error.errcode }
        switch error.kind {
        case .notFound, .methodNotAllowed, .malformed: return "M_UNRECOGNIZED"
        case .tooLarge: return "M_TOO_LARGE"
        case .busy: return "M_LIMIT_EXCEEDED"
        case .unavailable: return "M_UNAVAILABLE"
        case .requestTimeout, .internalError: return "M_UNKNOWN"
        }
    }
}
