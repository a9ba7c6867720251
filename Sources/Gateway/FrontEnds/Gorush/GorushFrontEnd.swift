import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import NIOHTTP1
import Pushkins
import ServiceLifecycle
import StatusAdapter

/// gorush's API, for an unmodified status-go whose `GorushURL` points here: `POST /api/push`,
/// `GET /healthz`, `GET /api/stat/app`. Errors are in gorush's shape, `{"code", "message"}`.
struct GorushFrontEnd: FrontEnd {
    let name = "gorush"
    let api: GorushAPI
    let maxBodyBytes: Int
    let apps: Set<String>

    var appsInUse: Set<String> { apps }

    func addRoutes(to routes: inout RouteTable) {
        let api = self.api
        routes.add(.exact("/api/push"), [.POST], maxBodyBytes: maxBodyBytes, dialect: .gorush) { request in
            .json(.ok, try await api.handle(body: Array(request.body.readableBytesView)))
        }
        routes.add(.exact("/healthz"), [.GET, .HEAD], dialect: .gorush) { _ in .empty(.ok) }
        routes.add(.exact("/api/stat/app"), [.GET], dialect: .gorush) { _ in .json(.ok, api.appStats()) }
    }

    /// The workers: on shutdown they finish the jobs they hold; the queue stays in the store.
    var services: [any Service] { [api] }
}

extension GorushError: HTTPResponseError {
    package var status: HTTPResponseStatus { isTemporary ? .serviceUnavailable : .badRequest }
    package var errcode: String { isTemporary ? "M_UNKNOWN" : "M_BAD_JSON" }
    package var headers: HTTPHeaders { isTemporary ? ["Retry-After": "5"] : HTTPHeaders() }
}
