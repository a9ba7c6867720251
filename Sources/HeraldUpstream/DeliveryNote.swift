package import HeraldCore

/// What the upstream call of one device leaves for its delivery trace (docs/operations.md, "Why
/// didn't my phone ring?"): how many attempts it made and the provider's id for the message.
package struct DeliveryNote: Sendable, Equatable {
    package var attempts: Int
    /// APNs `apns-id`, an FCM message name, a Huawei request id, a push service's message URL.
    package var providerId: String?
    /// Which of its forms the device was addressed by, where a provider has two: FCM's `token` or
    /// `fid` (docs/compatibility/fcm.md, "Installation ids").
    package var target: String?

    package init(attempts: Int = 0, providerId: String? = nil, target: String? = nil) {
        self.attempts = attempts
        self.providerId = providerId
        self.target = target
    }
}

/// A device's outcome and what its upstream call left for its trace: what a pushkin's dispatch
/// returns, and the front ends' sends through one.
package struct DeviceResult: Sendable {
    package var outcome: DeviceOutcome
    package var note: DeliveryNote

    package init(_ outcome: DeviceOutcome, note: DeliveryNote = DeliveryNote()) {
        self.outcome = outcome
        self.note = note
    }
}
