import HeraldHTTPServer

/// gorush's errors, as its API writes them: `{"code": <status>, "message": …}`.
struct GorushErrors: ErrorRenderer {
    func render(_ error: any HTTPResponseError) -> ServerResponse {
        var response = ServerResponse.json(error.status, ["code": .int(Int64(error.status.code)), "message": .string(error.message)])
        for (name, value) in error.headers { response.headers.add(name: name, value: value) }
        return response
    }
}
