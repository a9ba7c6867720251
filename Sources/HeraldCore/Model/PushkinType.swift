/// A pushkin's kind: the `type` of its app in the config, and the `<type>` of Sygnal's upstream
/// metric names (`sygnal_apns_request_time`). Each provider names its own beside its pushkin
/// (`PushkinType.apns` in Pushkins/APNs), so that a type is written once and compared as a value.
package struct PushkinType: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    package let rawValue: String

    package init(rawValue: String) { self.rawValue = rawValue }
    package init(_ rawValue: String) { self.rawValue = rawValue }

    package var description: String { rawValue }

    package static func < (lhs: PushkinType, rhs: PushkinType) -> Bool { lhs.rawValue < rhs.rawValue }
}
