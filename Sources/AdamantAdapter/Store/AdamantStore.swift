import Foundation
package import HeraldCore
import Pushkins
package import ServiceLifecycle

/// Where a device registered: `apns` (Apple's production host) or `apns-sandbox` (development).
package enum AdamantProvider: String, Sendable, CaseIterable {
    case apns
    case apnsSandbox = "apns-sandbox"
}

/// A device registered for an address.
package struct RegisteredDevice: Sendable, Equatable, Hashable {
    package var address: String
    /// Lowercase hex.
    package var token: String
    package var provider: AdamantProvider

    package init(address: String, token: String, provider: AdamantProvider) {
        self.address = address
        self.token = token
        self.provider = provider
    }
}

/// One registration signal, decoded: add (or update the provider of) or remove (address, token).
package struct DeviceChange: Sendable, Equatable {
    package enum Action: Sendable, Equatable {
        case add(AdamantProvider)
        case remove
    }

    package var address: String
    package var token: String
    package var action: Action

    package init(address: String, token: String, action: Action) {
        self.address = address
        self.token = token
        self.action = action
    }
}

/// The ADAMANT service's state: devices by address, a height cursor per poller, and the recently
/// pushed (transaction, device) keys that make a replayed batch push nothing twice. SQLite (one
/// instance) and PostgreSQL (several instances, one of which polls) implement it.
package protocol AdamantStore: Sendable {
    func migrate() async throws

    /// The height up to which `worker` has handled the chain; nil when it never ran.
    func cursor(_ worker: String) async throws -> Int64?

    /// Applies changes in the order given (the last one for an (address, token) wins) and moves
    /// `worker`'s cursor, in one transaction.
    func apply(_ changes: [DeviceChange], worker: String, cursor: Int64) async throws

    func devices(addresses: [String]) async throws -> [RegisteredDevice]

    /// Removes every registration of `token` with `provider`; returns how many.
    func remove(token: String, provider: AdamantProvider) async throws -> Int

    /// Which of `keys` were already pushed.
    func pushed(among keys: [String]) async throws -> Set<String>

    /// Records `keys` as pushed at once, each as soon as its push service accepted it: a poller
    /// killed before its batch's `commit` then pushes none of them again. The commit records them
    /// too (a mark that failed is not lost).
    func markPushed(_ keys: [String]) async throws

    /// How its latest operation went, for `/health`: nil for a store in this process (SQLite).
    var health: ComponentHealth? { get }

    /// Records `keys` as pushed and moves `worker`'s cursor, in one transaction, keeping at most
    /// `keep` recent keys.
    func commit(pushed keys: [String], worker: String, cursor: Int64, keep: Int) async throws

    /// Runs `body` while this instance holds the polling lease, and again each time it regains
    /// it, until `body` returns normally or a graceful shutdown begins; waits `retry` between
    /// attempts to take it. When the lease can no longer be proved (its connection failed, or
    /// another instance took it), `body` is cancelled and the lease is sought again.
    func whileLeader(retry: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws

    /// Throws `LeaseLost` unless this instance still holds the polling lease; a batch is pushed
    /// only after this check. One instance alone always holds it.
    func confirmLease() async throws

    var services: [any Service] { get }
    func close() async
}

extension AdamantStore {
    package var services: [any Service] { [] }
    package var health: ComponentHealth? { nil }

    /// One instance alone: always the leader.
    package func whileLeader(retry: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws { try await body() }

    package func confirmLease() async throws {}
}

/// This instance no longer holds the polling lease (docs/adamant.md, "Several instances"): its
/// pollers stop, and a cursor commit made after another instance took the lease is refused.
package struct LeaseLost: Error, CustomStringConvertible, Sendable {
    package var why: String
    package init(_ why: String) { self.why = why }
    package var description: String { "the ADAMANT polling lease was lost: \(why)" }
}
