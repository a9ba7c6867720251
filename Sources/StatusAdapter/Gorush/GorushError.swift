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
        }
    }
}
