package import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP network in CIDR notation (`127.0.0.0/8`, `::1/128`; a bare address is one host), and
/// whether an address lies in it. An IPv4 address reached over IPv6 (`::ffff:a.b.c.d`) is taken
/// as the IPv4 address.
package struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), masked to the prefix.
    let bytes: [UInt8]
    package let prefix: Int
    package let description: String

    /// Parses `address[/prefix]`; nil when it is neither.
    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.bytes(of: String(parts[0])) else { return nil }
        let bits = address.count * 8
        let prefix: Int
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...bits).contains(parsed) else { return nil }
            prefix = parsed
        } else {
            prefix = bits
        }
        self.bytes = Self.mask(address, prefix)
        self.prefix = prefix
        self.description = text
    }

    /// Whether `address` (an IP literal's bytes) lies in the network.
    package func contains(_ address: [UInt8]) -> Bool {
        var address = address
        if address.count == 16, address.prefix(10).allSatisfy({ $0 == 0 }), address[10] == 0xFF, address[11] == 0xFF, bytes.count == 4 {
            address = Array(address.suffix(4))
        }
        guard address.count == bytes.count else { return false }
        return Self.mask(address, prefix) == bytes
    }

    /// Whether every address of `other` lies in the network.
    package func contains(_ other: IPNetwork) -> Bool { other.prefix >= prefix && contains(other.bytes) }

    /// Whether the socket address's IP lies in the network.
    package func contains(_ address: SocketAddress) -> Bool {
        guard let ip = address.ipAddress, let bytes = Self.bytes(of: ip) else { return false }
        return contains(bytes)
    }

    /// Whether the network holds any address outside loopback, the private ranges and link-local
    /// (what an allow-list would let in from the internet).
    package var includesPublicAddresses: Bool {
        !Self.nonPublic.contains { $0.bytes.count == bytes.count && $0.prefix <= prefix && $0.contains(bytes) }
    }

    private static let nonPublic: [IPNetwork] = [
        "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10", "::1/128", "fc00::/7",
        "fe80::/10",
    ].compactMap(IPNetwork.init)

    /// Loopback and the private ranges: who may reach a service meant for this host's network.
    package static let loopbackAndPrivate: [IPNetwork] = [
        "127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7",
    ]
    .compactMap(IPNetwork.init)

    package static func bytes(of literal: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func mask(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let keep = max(0, min(8, prefix - index * 8))
            return keep == 8 ? byte : byte & ~(0xFF >> keep)
        }
    }
}
