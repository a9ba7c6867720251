package import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Classifies IP addresses, so that a homeserver cannot make Herald send requests into the
/// operator's own network (loopback, private, link-local, multicast, reserved ranges).
package enum NetworkAddress {
    package enum Kind: Sendable, Equatable {
        case global
        case nonPublic(String)
    }

    /// The kind of a literal IPv4/IPv6 address, or nil if `text` is not one.
    package static func classify(literal text: String) -> Kind? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return classifyV4(UInt32(bigEndian: v4.s_addr))
        }
        var v6 = in6_addr()
        let stripped = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        if inet_pton(AF_INET6, stripped, &v6) == 1 {
            return classifyV6(withUnsafeBytes(of: v6) { Array($0) })
        }
        return nil
    }

    /// IANA's IPv4 special-purpose registry, the blocks not globally reachable.
    static func classifyV4(_ a: UInt32) -> Kind {
        func inRange(_ base: UInt32, _ bits: UInt32) -> Bool {
            let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - bits)
            return a & mask == base & mask
        }
        let ranges: [(UInt32, UInt32, String)] = [
            (0x0000_0000, 8, "this-network"), (0x0A00_0000, 8, "private"), (0x6440_0000, 10, "shared address space"),
            (0x7F00_0000, 8, "loopback"), (0xA9FE_0000, 16, "link-local"), (0xAC10_0000, 12, "private"),
            (0xC000_0000, 24, "IETF protocol assignments"), (0xC000_0200, 24, "documentation"), (0xC058_6300, 24, "6to4 relay anycast"),
            (0xC0A8_0000, 16, "private"), (0xC612_0000, 15, "benchmarking"), (0xC633_6400, 24, "documentation"),
            (0xCB00_7100, 24, "documentation"), (0xE000_0000, 4, "multicast"), (0xF000_0000, 4, "reserved"),
        ]
        for (base, bits, name) in ranges where inRange(base, bits) { return .nonPublic(name) }
        return .global
    }

    /// IANA's IPv6 special-purpose registry. Addresses that carry an IPv4 address (mapped,
    /// IPv4-compatible, NAT64, 6to4, Teredo) are classified like the address they stand for.
    static func classifyV6(_ b: [UInt8]) -> Kind {
        func v4(_ offset: Int, xor: UInt32 = 0) -> UInt32 {
            (UInt32(b[offset]) << 24 | UInt32(b[offset + 1]) << 16 | UInt32(b[offset + 2]) << 8 | UInt32(b[offset + 3])) ^ xor
        }
        func prefix(_ bytes: [UInt8]) -> Bool { Array(b.prefix(bytes.count)) == bytes }
        if b.allSatisfy({ $0 == 0 }) { return .nonPublic("unspecified") }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return .nonPublic("loopback") }
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return classifyV4(v4(12)) }  // ::ffff:a.b.c.d
        if b[0..<12].allSatisfy({ $0 == 0 }) { return classifyV4(v4(12)) }  // ::a.b.c.d, IPv4-compatible
        if prefix([0x00, 0x64, 0xFF, 0x9B]) && b[4..<12].allSatisfy({ $0 == 0 }) { return classifyV4(v4(12)) }  // NAT64 64:ff9b::/96
        if prefix([0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01]) { return .nonPublic("local-use NAT64") }  // 64:ff9b:1::/48
        if prefix([0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]) { return .nonPublic("discard-only") }  // 100::/64
        if prefix([0x20, 0x01, 0x00, 0x00]) {  // Teredo 2001::/32: the server's IPv4, and the client's, inverted
            if case .nonPublic(let name) = classifyV4(v4(4)) { return .nonPublic(name) }
            return classifyV4(v4(12, xor: 0xFFFF_FFFF))
        }
        if prefix([0x20, 0x01, 0x0D, 0xB8]) { return .nonPublic("documentation") }  // 2001:db8::/32
        if b[0] == 0x20 && b[1] == 0x01 && b[2] < 0x02 { return .nonPublic("IETF protocol assignments") }  // 2001::/23
        if prefix([0x20, 0x02]) { return classifyV4(v4(2)) }  // 6to4 2002::/16
        if b[0] == 0x3F && b[1] == 0xFF && b[2] & 0xF0 == 0 { return .nonPublic("documentation") }  // 3fff::/20
        if prefix([0x5F, 0x00]) { return .nonPublic("segment routing") }  // 5f00::/16
        if b[0] & 0xFE == 0xFC { return .nonPublic("unique local") }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return .nonPublic("link-local") }
        if b[0] == 0xFF { return .nonPublic("multicast") }
        return .global
    }

    /// The worst kind among `addresses` (literal addresses; anything else counts as reserved).
    package static func classify(addresses: [String]) -> Kind {
        for address in addresses {
            switch classify(literal: address) {
            case .global?: continue
            case .nonPublic(let name)?: return .nonPublic(name)
            case nil: return .nonPublic("unparsable")
            }
        }
        return .global
    }

    /// The kind of the address a socket is connected to.
    package static func classify(_ address: SocketAddress) -> Kind {
        guard let ip = address.ipAddress else { return .nonPublic("non-IP") }
        return classify(literal: ip) ?? .nonPublic("unparsable")
    }

    package struct ResolutionError: Error, Sendable, Equatable {
        package var host: String
        package var reason: String
        package init(host: String, reason: String) {
            self.host = host
            self.reason = reason
        }
    }
}
