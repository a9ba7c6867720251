import HeraldCore
import HeraldHTTPServer
package import NIOHTTP1
import ServiceLifecycle
import StatusAdapter

/// gorush's API, for an unmodified status-go whose `GorushURL` points here: `POST /api/push`,
/// `GET /healthz`, `GET /api/stat/app`. Errors are in gorush's shape, `{"code", "message"}`.
struct GorushFrontEnd: FrontEnd {
    let name = "gorush"
    let api: GorushAPI
    let maxBodyBytes: Int
    let apps: Set<String>
    let access: GorushAccess

    var appsInUse: Set<String> { apps }

    func addRoutes(to routes: inout RouteBuilder) {
        let api = self.api
        let access = self.access
        routes.add(.exact("/api/push"), [.POST], maxBodyBytes: maxBodyBytes, errors: GorushErrors()) { request in
            try access.admit(request)
            let answer = try await api.handle(body: Array(request.body.readableBytesView))
            var response = ServerResponse.json(.ok, answer.body)
            // `sync` mode on the PostgreSQL record: the finishes are written once the answer is,
            // beside the client's next request, as a notify's are (docs/operations.md, "Once").
            if let finishing = answer.finishing {
                response.afterAnswer = { _ in finishing.answered(heard: false) }
            }
            return response
        }
        routes.add(.exact("/healthz"), [.GET, .HEAD], errors: GorushErrors()) { _ in .empty(.ok) }
        routes.add(.exact("/api/stat/app"), [.GET], errors: GorushErrors()) { request in
            try access.admit(request)
            return .json(.ok, api.appStats())
        }
    }

    /// The workers: on shutdown they finish the jobs they hold; the queue stays in the store.
    var services: [any Service] { [api] }
}

/// Who may use gorush's API, which has no authentication of its own (gorush issue 877): clients
/// in `gorush.allowed_networks` and, when `gorush.auth_token_file` is set, with its bearer token,
/// compared in constant time.
struct GorushAccess: Sendable {
    let networks: [IPNetwork]
    let token: [UInt8]?

    init(networks: [IPNetwork], token: String?) {
        self.networks = networks
        self.token = token.map { Array($0.utf8) }
    }

    func admit(_ request: ServerRequest) throws(GorushError) {
        guard let peer = request.peer, networks.contains(where: { $0.contains(peer) }) else { throw .forbidden }
        guard let token else { return }
        guard let header = request.headers.first(name: "authorization"), header.lowercased().hasPrefix("bearer "),
            ConstantTime.equals(Array(header.utf8.dropFirst(7)), token)
        else { throw .unauthorized }
    }
}

extension GorushError: HTTPResponseError {
    package var status: HTTPResponseStatus { HTTPResponseStatus(statusCode: statusCode) }
    package var errcode: String {
        switch self {
        case .queueFull, .queueUnavailable: return "M_UNKNOWN"
        case .forbidden, .unauthorized: return "M_FORBIDDEN"
        default: return "M_BAD_JSON"
        }
    }
    package var headers: HTTPHeaders {
        switch self {
        case .queueFull, .queueUnavailable: return ["Retry-After": "5"]
        case .unauthorized: return ["WWW-Authenticate": "Bearer"]
        default: return HTTPHeaders()
        }
    }
}
