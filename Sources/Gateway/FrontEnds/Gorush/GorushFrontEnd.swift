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

    /// The workers: they stop taking new work on shutdown and finish what is queued.
    var services: [any Service] { [api] }
}

extension GorushError: HTTPResponseError {
    public var status: HTTPResponseStatus { HTTPResponseStatus(statusCode: 400) }
    public var errcode: String { "M_BAD_JSON" }
}
