import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns a host name into its addresses. The system's resolver (`getaddrinfo`, off the event
/// loops) in production; tests substitute answers to stage DNS rebinding. Herald keeps no cache of
/// its own: the system resolver caches within each answer's TTL.
package struct HostResolver: Sendable {
    package let resolve: @Sendable (_ host: String, _ port: Int) async -> Result<[String], NetworkAddress.ResolutionError>

    package init(resolve: @escaping @Sendable (_ host: String, _ port: Int) async -> Result<[String], NetworkAddress.ResolutionError>) {
        self.resolve = resolve
    }

    package static let system = HostResolver { host, port in
        if NetworkAddress.classify(literal: host) != nil { return .success([host]) }
        do {
            return try await NIOThreadPool.singleton.runIfActive { lookup(host: host, port: port) }
        } catch {
            return .failure(NetworkAddress.ResolutionError(host: host, reason: "resolver unavailable"))
        }
    }

    private static func lookup(host: String, port: Int) -> Result<[String], NetworkAddress.ResolutionError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            return .failure(NetworkAddress.ResolutionError(host: host, reason: "cannot resolve"))
        }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var pointer: UnsafeMutablePointer<addrinfo>? = first
        while let info = pointer {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if let address = info.pointee.ai_addr {
                if info.pointee.ai_family == AF_INET {
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                        var a = sin.pointee.sin_addr
                        _ = inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count))
                    }
                } else if info.pointee.ai_family == AF_INET6 {
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin in
                        var a = sin.pointee.sin6_addr
                        _ = inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count))
                    }
                }
                addresses.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            pointer = info.pointee.ai_next
        }
        return .success(addresses)
    }
}
