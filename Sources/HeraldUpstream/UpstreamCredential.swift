package import FoundationEssentials
import HeraldCore

/// What an upstream call authenticates with (an APNs provider token, an OAuth access token, a
/// service-account JWT): `UpstreamCall` asks for the value to send before each attempt and, when
/// the upstream refuses it (`UpstreamVerdict.renewCredential`), tells the credential at once, before
/// the call returns and whatever attempts remain, so that no later request of any device sends it
/// again (docs/architecture.md, "The upstream-call path"). A provider's credential is one
/// conformance; the renewal is not repeated in each pushkin.
package protocol UpstreamCredential: Sendable {
    /// The value to send: the one held, or a new one when none is held (never made, expired, or
    /// refused). Throws why no request can be built: `temporary` (a token endpoint that did not
    /// answer) or `permanent` (a key that cannot sign).
    func value() async throws(UpstreamPreparationError) -> String

    /// The upstream refused `value`: forget it now, unless it was replaced already.
    func refuse(_ value: String) async -> CredentialRefusal

    /// What an operator should check when a value made to replace a refused one is refused too
    /// (logged with the refusal): the key files and ids the credential is made from.
    var whatToCheck: String { get }
}

/// What a refusal did to the credential.
package enum CredentialRefusal: Sendable, Equatable {
    /// The value had been replaced already (another request's refusal dropped it): nothing to do.
    case alreadyReplaced
    /// Dropped: a value in use was refused (it expired, or was revoked). The usual renewal.
    case dropped
    /// Dropped, and the value had itself been made to replace a refused one: renewing does not
    /// help, so the configuration (or the provider) is at fault. `firstInARow` is true for the
    /// first such refusal since a value last lived to its normal end: the one that is logged.
    case droppedAfterRenewal(firstInARow: Bool)

    package var dropped: Bool { self != .alreadyReplaced }
}

/// A credential's current value and what is known of its refusals: the one piece of state every
/// `UpstreamCredential` keeps, under its own lock or actor.
package struct RefusableValue: Sendable {
    private var current: (value: String, expires: Date)?
    /// The next value stored replaces a refused one.
    private var renewingAfterRefusal = false
    /// The current value replaced a refused one.
    private var currentReplacesRefused = false
    /// Values refused in a row, each made to replace the one before.
    private var refusedAfterRenewal = 0

    package init() {}

    /// The value held, while more than `margin` seconds of its life remain at `now`.
    package func valid(at now: Date, margin: TimeInterval) -> String? {
        guard let current, current.expires.timeIntervalSince(now) > margin else { return nil }
        return current.value
    }

    /// Holds a newly made value until `expires`.
    package mutating func store(_ value: String, expires: Date) {
        current = (value, expires)
        currentReplacesRefused = renewingAfterRefusal
        renewingAfterRefusal = false
        if !currentReplacesRefused { refusedAfterRenewal = 0 }
    }

    /// Forgets `value` if it is the one held.
    package mutating func refuse(_ value: String) -> CredentialRefusal {
        guard let current, current.value == value else { return .alreadyReplaced }
        self.current = nil
        renewingAfterRefusal = true
        guard currentReplacesRefused else { return .dropped }
        refusedAfterRenewal += 1
        return .droppedAfterRenewal(firstInARow: refusedAfterRenewal == 1)
    }
}
