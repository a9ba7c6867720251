/// A provider's own reason for its answer to one device. Each provider's type lives in its
/// pushkin's folder, next to the one table that classifies its answers; the core only reads it
/// through these words.
package protocol ProviderReason: Sendable, CustomStringConvertible {
    /// The HTTP status of the answer the reason came with.
    var status: Int { get }
    /// The metric and log label: a bounded vocabulary (the provider's reason or code, or
    /// `http_<status>`), never free text.
    var label: String { get }
    /// Whether a rejection for this reason means the device token itself is dead, so the front
    /// ends that keep tokens (the relay, Status, ADAMANT) forget it. Read from the provider's own
    /// table, never a second one.
    var rejectionMeansDeadToken: Bool { get }
    /// Whether `other` is the same reason (for `OutcomeReason`'s equality).
    func isSame(as other: any ProviderReason) -> Bool
}

extension ProviderReason where Self: Equatable {
    package func isSame(as other: any ProviderReason) -> Bool { (other as? Self) == self }
}
