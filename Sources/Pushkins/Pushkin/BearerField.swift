import Synchronization

/// The `Authorization` field's value for an OAuth access token, `Bearer <token>`, made once per
/// token rather than once per request: a token serves every request of its app for most of an
/// hour, and the same token is handed out as the same string, so the comparison is short.
final class BearerField: Sendable {
    private let last = Mutex<(token: String, field: String)?>(nil)

    func value(for token: String) -> String {
        last.withLock { held in
            if let held, held.token == token { return held.field }
            let field = "Bearer " + token
            held = (token, field)
            return field
        }
    }
}
