import Synchronization

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

    /// Where the call running in this task writes its note: bound by the dispatcher for each device
    /// it wants traced, nil elsewhere (a call of the Status server, the relay, a token endpoint).
    @TaskLocal package static var sink: DeliveryNotes.Sink?

    /// An upstream call's attempts added, its provider id kept when it has one.
    mutating func add(attempts: Int, providerId: String?) {
        self.attempts += attempts
        if let providerId { self.providerId = providerId }
    }
}

/// The notes of one group of devices, by pushkey.
package final class DeliveryNotes: Sendable {
    /// The first device's note in place, the others by pushkey: a group of one device (a notify's
    /// usual) makes no table.
    struct Table {
        var first: (pushkey: String, note: DeliveryNote)?
        var rest: [String: DeliveryNote] = [:]

        mutating func add(_ pushkey: String, attempts: Int, providerId: String?) {
            update(pushkey) { $0.add(attempts: attempts, providerId: providerId) }
        }

        mutating func update(_ pushkey: String, _ change: (inout DeliveryNote) -> Void) {
            if first == nil { first = (pushkey, DeliveryNote()) }
            if first?.pushkey == pushkey {
                if var note = first?.note {
                    change(&note)
                    first?.note = note
                }
            } else {
                change(&rest[pushkey, default: DeliveryNote()])
            }
        }

        func note(for pushkey: String) -> DeliveryNote {
            if let first, first.pushkey == pushkey { return first.note }
            return rest[pushkey] ?? DeliveryNote()
        }
    }

    private let notes = Mutex(Table())

    /// `devices`: how many the group has, for the table to be made at its size.
    package init(devices: Int = 1) {
        if devices > 1 { notes.withLock { $0.rest.reserveCapacity(devices - 1) } }
    }

    /// One device's place in `notes`.
    package struct Sink: Sendable {
        let notes: DeliveryNotes
        let pushkey: String

        package init(_ notes: DeliveryNotes, pushkey: String) {
            self.notes = notes
            self.pushkey = pushkey
        }

        /// Adds an upstream call's attempts (a device's dispatch may make more than one call:
        /// an OAuth token, a sibling host) and keeps the last provider id.
        func add(attempts: Int, providerId: String?) {
            notes.notes.withLock { $0.add(pushkey, attempts: attempts, providerId: providerId) }
        }

        /// The form the device was addressed by (`DeliveryNote.target`).
        package func addressed(as target: String) {
            notes.notes.withLock { $0.update(pushkey) { $0.target = target } }
        }
    }

    package func note(for pushkey: String) -> DeliveryNote {
        notes.withLock { $0.note(for: pushkey) }
    }
}
