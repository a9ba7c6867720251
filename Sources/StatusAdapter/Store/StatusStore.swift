package import Foundation
package import HeraldCore
package import ServiceLifecycle

/// A registration row: the hashed client key, the installation, the version (kept after an
/// unregister) and the serialized `PushNotificationRegistration` (nil after an unregister).
package struct StoredRegistration: Sendable, Equatable {
    package var publicKey: [UInt8]
    package var installationId: String
    package var version: UInt64
    package var registration: [UInt8]?

    package init(publicKey: [UInt8], installationId: String, version: UInt64, registration: [UInt8]?) {
        self.publicKey = publicKey
        self.installationId = installationId
        self.version = version
        self.registration = registration
    }
}

/// Where the Status server keeps its identity, registrations and answered push requests.
/// SQLite (one instance) and PostgreSQL (several instances as one server) implement it; both
/// pass the same tests. gorush's queue lives there too (`GorushQueueStore`).
package protocol StatusStore: GorushQueueStore {
    /// Creates or upgrades the schema.
    func migrate() async throws

    /// How its latest operation went, for `/health`: nil for a store that lives in this process
    /// (SQLite), whose failures are the instance's own.
    var health: ComponentHealth? { get }

    /// The server identity's 32-byte secret, creating `candidate` as it when there is none yet
    /// (the first instance to store one wins; every instance returns the same).
    func identity(orCreate candidate: [UInt8]) async throws -> [UInt8]

    func registration(publicKey: [UInt8], installationId: String) async throws -> StoredRegistration?

    /// Registered (not unregistered) rows for any of `publicKeys`.
    func registrations(publicKeys: [[UInt8]]) async throws -> [StoredRegistration]

    /// Writes `row` only if its version is greater than the stored one (or there is none).
    /// Returns false when a row with an equal or greater version exists: concurrent writers with
    /// increasing versions never lose the newest.
    func write(_ row: StoredRegistration) async throws -> Bool

    /// Clears the registration (keeping the version) if it is still at `version`: a device token
    /// the push service rejected. A newer registration is left alone.
    func dropRegistration(publicKey: [UInt8], installationId: String, version: UInt64) async throws

    /// The response given to a push request, if it was answered within its lifetime.
    func cachedResponse(messageId: [UInt8], now: Date) async throws -> [UInt8]?

    /// Remembers the responses to push requests, each until its `expires`, in one transaction
    /// where the store has them. Expired entries, and the earliest to expire beyond `limit`, are
    /// pruned on the first insert and every `StatusStoreMaintenance.pruneEvery` inserts after it
    /// (pruning on every insert would scan up to `limit` rows each time); SQLite then cuts the
    /// cache to nine tenths of `limit`, so that it scans once per tenth of the limit inserted.
    func cacheResponses(_ entries: [CachedResponse], limit: Int) async throws

    /// The `digest` of each response id kept at `now`, where this process is the store's only
    /// writer (SQLite: one Herald serves the file); nil where other instances write it too
    /// (PostgreSQL), whose lookups must then always ask the store. Digests, not ids: a full cache's
    /// ids are read one at a time, never all held at once.
    func cachedMessageIds(now: Date, digest: @Sendable (UnsafeRawBufferPointer) -> UInt64) async throws -> [UInt64]?

    /// What must run while the store is used (PostgreSQL's connection pool), in the gateway's
    /// service group before anything that uses the store.
    var services: [any Service] { get }

    /// Releases what the store holds itself (SQLite's file); a pool in `services` stops with them.
    func close() async
}

extension StatusStore {
    package var services: [any Service] { [] }
    package var health: ComponentHealth? { nil }

    package func cachedMessageIds(now: Date, digest: @Sendable (UnsafeRawBufferPointer) -> UInt64) async throws -> [UInt64]? {
        nil
    }

    /// Remembers one response (`cacheResponses` with one entry).
    package func cacheResponse(messageId: [UInt8], response: [UInt8], expires: Date, limit: Int) async throws {
        try await cacheResponses([CachedResponse(messageId: messageId, response: response, expires: expires)], limit: limit)
    }
}

/// The response given to a push request, kept until `expires` for its duplicates.
package struct CachedResponse: Sendable, Equatable {
    package var messageId: [UInt8]
    package var response: [UInt8]
    package var expires: Date

    package init(messageId: [UInt8], response: [UInt8], expires: Date) {
        self.messageId = messageId
        self.response = response
        self.expires = expires
    }

    /// `entries` with only the last of each id, in the order of those last ones.
    static func lastOfEachId(_ entries: [CachedResponse]) -> [CachedResponse] {
        var last: [[UInt8]: Int] = [:]
        for (position, entry) in entries.enumerated() { last[entry.messageId] = position }
        guard last.count < entries.count else { return entries }
        return entries.enumerated().compactMap { position, entry in last[entry.messageId] == position ? entry : nil }
    }
}

package enum StatusStoreMaintenance {
    package static let pruneEvery = 256

    /// Counts `count` more inserts on `inserts`; true when one of them is a pruning insert: insert
    /// k (from 1) prunes when k % pruneEvery == 1, as it would written alone.
    static func countInserts(_ count: Int, on inserts: AtomicCounter) -> Bool {
        let before = inserts.add(count) - count
        return (before..<(before + count)).contains { $0 % pruneEvery == 0 }
    }
}
