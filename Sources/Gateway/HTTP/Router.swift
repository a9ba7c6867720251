import NIOHTTP1

/// Routes by path, then by method. Unknown paths get 404 and wrong methods 405, both as
/// `M_UNRECOGNIZED` JSON (as the Matrix spec asks, where Sygnal sends HTML pages).
public struct Router: HTTPHandler {
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    public enum PathMatch: Sendable {
        case exact(String)
        /// The path itself and everything below it (`/a` matches `/a`, `/a/`, `/a/b`).
        case subtree(String)

        func matches(_ path: String) -> Bool {
            switch self {
            case .exact(let p): return path == p
            case .subtree(let p): return path == p || path.hasPrefix(p + "/")
            }
        }
    }

    private var routes: [(PathMatch, [String: Handler])] = []

    public init() {}

    public mutating func add(_ match: PathMatch, _ methods: [HTTPMethod], _ handler: @escaping Handler) {
        if let index = routes.firstIndex(where: { "\($0.0)" == "\(match)" }) {
            for method in methods { routes[index].1[method.rawValue] = handler }
        } else {
            var table: [String: Handler] = [:]
            for method in methods { table[method.rawValue] = handler }
            routes.append((match, table))
        }
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let path = request.path
        guard let (_, methods) = routes.first(where: { $0.0.matches(path) }) else {
            return .matrixError(.notFound, "M_UNRECOGNIZED", "Unrecognized request")
        }
        guard let handler = methods[request.method.rawValue] else {
            var response = HTTPResponse.matrixError(.methodNotAllowed, "M_UNRECOGNIZED", "Unrecognized request")
            response.headers.add(name: "Allow", value: methods.keys.sorted().joined(separator: ", "))
            return response
        }
        return await handler(request)
    }
}
