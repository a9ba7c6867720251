import NIOSSL
import Synchronization

/// The TLS client contexts of one gateway's upstream connections, one per distinct configuration.
/// Making a context parses the system's trust store, which costs about 1 MiB of memory and some
/// milliseconds; without sharing, APNs would pay that once per pooled connection and per pushkin
/// (the relay's two hosts included). See docs/operations.md, "Memory".
///
/// Configurations are compared whole (NIOSSL's best-effort equality: certificates by content,
/// trust-root files by path). The pushkins of a gateway share one set (`PushkinEnvironment`); a
/// gateway built again, on a reload, starts with a set of its own, so a replaced file is read
/// again there.
package final class TLSContexts: Sendable {
    private let made = Mutex<[Key: NIOSSLContext]>([:])

    package init() {}

    /// The context for `configuration`, made on its first use.
    func context(for configuration: TLSConfiguration) throws -> NIOSSLContext {
        let key = Key(configuration: configuration)
        if let context = made.withLock({ $0[key] }) { return context }
        let context = try NIOSSLContext(configuration: configuration)
        // Made outside the lock (it reads files); if another caller made one meanwhile, theirs is kept.
        return made.withLock { made in
            if let earlier = made[key] { return earlier }
            made[key] = context
            return context
        }
    }

    /// How many contexts were made (for tests and diagnostics).
    var count: Int { made.withLock { $0.count } }

    private struct Key: Hashable, Sendable {
        let configuration: TLSConfiguration
        static func == (a: Key, b: Key) -> Bool { a.configuration.bestEffortEquals(b.configuration) }
        func hash(into hasher: inout Hasher) { configuration.bestEffortHash(into: &hasher) }
    }
}
