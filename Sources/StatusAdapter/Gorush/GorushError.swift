/// Why gorush's `POST /api/push` refuses a request: gorush's own messages for a request that is
/// wrong (400), and Herald's for a queue that cannot take it now (503 with `Retry-After`), as
/// `{"code": …, "message": …}` (the gateway renders it in gorush's shape).
package enum GorushError: Error, Sendable, Equatable {
    case missingNotifications
    case emptyNotifications
    case tooManyNotifications(Int, limit: Int)
    case invalidNotification
    /// The queue holds `queue_size` jobs or `queue_max_bytes` bytes: try again later.
    case queueFull
    /// The Status store could not be written: try again later.
    case queueUnavailable
    /// The client's address is not in `gorush.allowed_networks`.
    case forbidden
    /// `gorush.auth_token_file` is set and the request's bearer token is missing or wrong.
    case unauthorized

    /// The HTTP status gorush's shape carries: 400 for a request that is wrong, 401 and 403 for
    /// one not allowed, 503 for one to try again later.
    package var statusCode: Int {
        switch self {
        case .queueFull, .queueUnavailable: return 503
        case .forbidden: return 403
        case .unauthorized: return 401
        default: return 400
        }
    }

    /// Whether the sender should try the same request again later.
    package var isTemporary: Bool { self == .queueFull || self == .queueUnavailable }

    package var message: String {
        switch self {
        case .missingNotifications: return "Missing notifications field."
        case .emptyNotifications: return "Notifications field is empty."
        case .tooManyNotifications(let count, let limit): return "Number of notifications(\(count)) over limit(\(limit))"
        case .invalidNotification: return "Each notification needs tokens and a platform."
        case .queueFull: return "Queue is full, try again later."
        case .queueUnavailable: return "Queue is unavailable, try again later."
        case .forbidden: return "This address may not use the push API."
        case .unauthorized: return "A valid bearer token is required."
        }
    }
}
