package import HeraldCore

/// `badge_priority` (FCM, Huawei): the priority of a notify with nothing to show, a badge update
/// (docs/compatibility/fcm.md, "Priority"). Firebase delivers a high-priority message that does
/// not lead to a visible notification at normal priority from then on, so an app whose pushes are
/// mostly counts would lose the priority its messages need: such a notify goes at `normal` unless
/// the app asks for `high`.
package enum BadgePriority: String, Sendable {
    case normal, high

    /// Reads `badge_priority`: `normal` (the default) or `high`.
    package static func read(_ config: ConfigSection) -> BadgePriority {
        guard let raw = config.string("badge_priority") else { return .normal }
        guard let parsed = BadgePriority(rawValue: raw) else {
            config.diagnostics.error(config.keyPath("badge_priority"), "must be normal or high, got '\(raw)'")
            return .normal
        }
        return parsed
    }

    /// Whether `n` goes at high priority: not `prio: low`, and either it is about an event (it
    /// shows something) or the app sends badge updates at high priority.
    package func isHigh(_ n: PushNotification) -> Bool {
        !n.isLowPriority && (n.eventId?.isEmpty == false || self == .high)
    }
}
