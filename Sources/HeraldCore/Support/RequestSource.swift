package import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Who sent a request, as fair shares count it (docs/operations.md, "Sources"): an IPv4 address, or
/// an IPv6 address's /64 (one site's addresses, which a host may rotate through). The peer, or,
/// when the peer is a trusted proxy (`http.trusted_proxies`), the client `X-Forwarded-For` names.
/// A value of two words: taken from a socket address without an allocation.
package struct RequestSource: Hashable, Sendable, CustomStringConvertible {
    /// The IPv4 address, or the IPv6 address's first 64 bits.
    let bits: UInt64
    /// 4 or 6.
    let family: UInt8

    package init(ipv4: UInt32) {
        bits = UInt64(ipv4)
        family = 4
    }

    package init(ipv6Prefix: UInt64) {
        bits = ipv6Prefix
        family = 6
    }

    /// From an address's bytes (4 or 16; an IPv4 address mapped into IPv6 is the IPv4 address).
    package init?(bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        if bytes.count == 4 {
            self.init(ipv4: bytes.reduce(0) { $0 << 8 | UInt32($1) })
        } else if bytes.count == 16 {
            if bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                self.init(bytes: bytes.suffix(4))
            } else {
                self.init(ipv6Prefix: bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) })
            }
        } else {
            return nil
        }
    }

    /// The peer of a connection; nil for a Unix socket.
    package init?(peer: SocketAddress) {
        switch peer {
        case .v4(let address):
            self.init(ipv4: UInt32(bigEndian: address.address.sin_addr.s_addr))
        case .v6(let address):
            var raw = address.address.sin6_addr
            let bytes = withUnsafeBytes(of: &raw) { Array($0) }
            self.init(bytes: bytes)
        case .unixDomainSocket:
            return nil
        }
    }

    /// The request's source: the peer, or, from a peer in `trusted`, the rightmost address of
    /// `X-Forwarded-For` that is not itself a trusted proxy (each proxy appends the address it was
    /// reached from, so the entries left of the last untrusted one are the client's own words).
    package static func of(peer: SocketAddress?, forwardedFor: String?, trusted: [IPNetwork]) -> RequestSource? {
        guard let peer else { return nil }
        guard !trusted.isEmpty, let forwardedFor, let peerBytes = Self.bytes(of: peer),
            trusted.contains(where: { $0.contains(peerBytes) })
        else { return RequestSource(peer: peer) }
        var chosen: RequestSource?
        for entry in forwardedFor.split(separator: ",").reversed() {
            let text = String(entry).trimmed
            guard let bytes = IPNetwork.bytes(of: Self.stripped(text)), let source = RequestSource(bytes: bytes) else { break }
            chosen = source
            if !trusted.contains(where: { $0.contains(bytes) }) { break }
        }
        return chosen ?? RequestSource(peer: peer)
    }

    /// An entry without its port and brackets (`[2001:db8::1]:443`, `203.0.113.7:5000`).
    static func stripped(_ entry: String) -> String {
        if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
            return String(entry[entry.index(after: entry.startIndex)..<close])
        }
        if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") { return String(entry[..<colon]) }
        return entry
    }

    static func bytes(of peer: SocketAddress) -> [UInt8]? {
        switch peer {
        case .v4(let address):
            var raw = address.address.sin_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        case .v6(let address):
            var raw = address.address.sin6_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        case .unixDomainSocket:
            return nil
        }
    }

    /// The address's bytes as a network's check reads them: an IPv6 source's /64 with zeros after.
    package var bytes: [UInt8] {
        if family == 4 { return (0..<4).map { UInt8(truncatingIfNeeded: bits >> (24 - 8 * $0)) } }
        return (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) } + [UInt8](repeating: 0, count: 8)
    }

    /// Whether the source lies in `network` (an IPv6 source by its /64).
    package func isIn(_ network: IPNetwork) -> Bool { network.contains(bytes) }

    /// `203.0.113.7`, or `2001:db8:1:2::/64`.
    package var description: String {
        if family == 4 { return bytes.map(String.init).joined(separator: ".") }
        let groups = (0..<4).map { String(UInt16(truncatingIfNeeded: bits >> (48 - 16 * $0)), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}

extension String {
    /// Without the spaces and tabs around it.
    fileprivate var trimmed: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
