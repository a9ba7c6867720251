/// Why gorush's `POST /api/push` refuses a request: gorush's own messages, answered 400 as
/// `{"code": 400, "message": …}` (the gateway renders it in gorush's shape).
public enum GorushError: Error, Sendable, Equatable {
    case missingNotifications
    case emptyNotifications
    case tooManyNotifications(Int, limit: Int)
    case invalidNotification

    public var message: String {
        switch self {
        case .missingNotifications: return "Missing notifications field."
        case .emptyNotifications: return "Notifications field is empty."
        case .tooManyNotifications(let count, let limit): return "Number of notifications(\(count)) over limit(\(limit))"
        case .invalidNotification: return "Each notification needs tokens and a platform."
        }
    }
}
