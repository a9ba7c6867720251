package import FoundationEssentials
import HeraldCore
import NIOCore
import NIOPosix
import NIOSSL

/// The one origin (`scheme://host[:port]`) a direct transport talks to.
package struct UpstreamOrigin: Sendable {
    package let secure: Bool
    package let host: String
    package let port: Int
    /// `host[:port]`, the port left out when it is the scheme's default: `:authority` and `Host`.
    package let authority: String
    /// `host:port` always: the target of a CONNECT.
    package let hostPort: String
    /// `scheme://host[:port]` as the URL wrote it, cut from each request's URL.
    package let prefix: String

    package init(_ url: String) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = Self.wireHost(components), !host.isEmpty
        else { throw UpstreamOriginError(url: url) }
        secure = scheme == "https"
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let defaultPort = secure ? 443 : 80
        port = components.port ?? defaultPort
        let bracketed = self.host.utf8.contains(UInt8(ascii: ":")) ? "[\(self.host)]" : self.host
        authority = port == defaultPort ? bracketed : "\(bracketed):\(port)"
        hostPort = "\(bracketed):\(port)"
        prefix = Self.prefix(of: url)
    }

    /// The host as DNS, TLS (SNI) and the `Host` header take it: an internationalized name in its
    /// ASCII form (`xn--bcher-kva.de`), percent-escapes left as written. `URLComponents.host`
    /// would decode it to Unicode (`bücher.de`), which no resolver takes, and run ICU's IDNA
    /// decoding, with its data, for every request.
    package static func wireHost(_ components: URLComponents) -> String? { components.encodedHost }

    /// Whether `url` has a space or a control character.
    package static func hasSpaceOrControl(_ url: String) -> Bool { url.utf8.contains { $0 <= 0x20 || $0 == 0x7F } }

    /// `scheme://authority` as `url` writes it, without parsing the rest: a base URL's own path
    /// stays in the request's path.
    static func prefix(of url: String) -> String {
        let afterScheme = authorityStart(of: url) ?? url.startIndex
        return String(url[..<(url[afterScheme...].firstIndex(where: { $0 == "/" || $0 == "?" }) ?? url.endIndex)])
    }

    /// Where a URL's authority starts: just after its first `://`, nil without one. Searched in
    /// its UTF-8 (Foundation's `range(of:)` allocated twice a call, on every Web Push request).
    package static func authorityStart(of url: String) -> String.Index? {
        let utf8 = url.utf8
        var from = utf8.startIndex
        while let colon = utf8[from...].firstIndex(of: UInt8(ascii: ":")) {
            let after = utf8.index(after: colon)
            if utf8[after...].starts(with: "//".utf8) { return utf8.index(after, offsetBy: 2) }
            from = after
        }
        return nil
    }

    /// The request target of `request`: its own `path`, checked as `path(of:)` checks a URL's,
    /// else the path of its URL on this origin.
    func target(of request: UpstreamRequest) throws -> String {
        guard let path = request.path else { return try self.path(of: request.url) }
        guard path.hasPrefix("/"), !Self.hasSpaceOrControl(path) else { throw UpstreamOriginError(url: request.url + path) }
        return path
    }

    /// A request URL's path (and query) on this origin. A URL with a space or a control character
    /// is refused: it would make a broken request line.
    package func path(of url: String) throws -> String {
        if url.hasPrefix(prefix), !Self.hasSpaceOrControl(url) {
            let rest = url.dropFirst(prefix.utf8.count)
            if rest.isEmpty || rest.hasPrefix("?") { return "/" + rest }
            if rest.hasPrefix("/") { return String(rest) }
        }
        throw UpstreamOriginError(url: url)
    }
}

/// A URL a direct transport cannot send to: not http(s), or not on its origin.
package struct UpstreamOriginError: Error, Sendable, CustomStringConvertible {
    package let url: String
    package var description: String { "not a URL of this upstream: \(url)" }
}

/// Opens connections to an origin for the direct transports: TCP (through the outbound proxy's
/// CONNECT tunnel unless the host is in its `NO_PROXY` list), then TLS for https, then the
/// protocol's own handlers. `connect_timeout` bounds all of it, up to the moment the protocol
/// says it is ready.
///
/// With an address guard (endpoints the policy checks, reached without the proxy) the host is
/// resolved first and every address it answers is classified before any socket is opened: a name
/// with one loopback, private or reserved address among its answers is refused whole, and the
/// connection goes to the checked addresses only, by address, with the host name kept for TLS
/// (SNI) and `Host`. Nothing listening, or not, behind a refused address can change the answer,
/// since no `connect(2)` is made to it (docs/compatibility/webpush.md, "Which endpoints Herald reaches").
struct UpstreamConnector: Sendable {
    let origin: UpstreamOrigin
    let proxy: ProxySettings?
    let tls: NIOSSLContext?
    let connectTimeout: TimeAmount
    /// What `connect_timeout`'s total bound runs on (the loops' own clock, but in tests). The
    /// socket's own connect timeout and each address's share stay on the loop's clock: they end a
    /// try sooner, never later, than the total bound.
    let clock: any LoopClock
    /// Resolves the host for the address check; nil when no check applies (the operator allowed
    /// private endpoints or named the host, or the proxy resolves it).
    let addressGuard: HostResolver?

    /// `tls` is used for https origins. With `addressGuard`, connections made without the proxy go
    /// to checked addresses only; through the proxy, whose peer is the proxy, the policy resolved
    /// and checked the name for the request itself.
    init(
        origin: UpstreamOrigin, settings: UpstreamSettings, tls: NIOSSLContext?, addressGuard: HostResolver? = nil,
        clock: any LoopClock
    ) {
        self.clock = clock
        self.origin = origin
        proxy = settings.proxy.flatMap { $0.bypasses(origin.host) ? nil : $0 }
        self.addressGuard = proxy == nil ? addressGuard : nil
        connectTimeout = TimeAmount(settings.connectTimeout)
        self.tls = origin.secure ? tls : nil
    }

    /// The TLS context for `settings`: `tls` (or the system's defaults), trusting the extra CA
    /// files of `settings` too; one of `shared`.
    static func tlsContext(_ tls: TLSConfiguration?, settings: UpstreamSettings, shared: TLSContexts = TLSContexts()) throws
        -> NIOSSLContext
    {
        var tls = tls ?? .makeClientConfiguration()
        if !settings.trustedCAFiles.isEmpty { tls.additionalTrustRoots = settings.trustedCAFiles.map { .file($0) } }
        return try shared.context(for: tls)
    }

    /// Connects, and once the tunnel and TLS handler are in place runs `configure` on the channel's
    /// event loop: it adds the protocol's handlers and returns what becomes ready when the
    /// connection is usable. On a failure or past the connect timeout the channel is closed.
    func connect<Ready: Sendable>(
        on loop: any EventLoop, configure: @escaping @Sendable (any Channel) throws -> EventLoopFuture<Ready>
    ) -> EventLoopFuture<Ready> {
        let promise = loop.makePromise(of: Ready.self)
        let timeout = clock.schedule(in: connectTimeout, on: loop) { promise.fail(UpstreamConnectionError.connectTimeout) }
        promise.futureResult.whenComplete { _ in timeout.cancel() }
        let (origin, proxy, tls, addressGuard, connectTimeout) = (self.origin, self.proxy, self.tls, self.addressGuard, self.connectTimeout)
        let connected: EventLoopFuture<any Channel>
        if let addressGuard {
            let deadline = loop.now + connectTimeout
            connected = loop.makeFutureWithTask {
                try await Self.checkedAddresses(of: origin, resolver: addressGuard)
            }.flatMap { addresses in
                Self.connectFirst(addresses[...], on: loop, timeout: connectTimeout, until: deadline)
            }
        } else {
            connected = Self.bootstrap(loop, connectTimeout).connect(host: proxy?.host ?? origin.host, port: proxy?.port ?? origin.port)
        }
        connected
            .flatMap { channel -> EventLoopFuture<Ready> in
                // A connection made after the deadline is closed, not kept.
                promise.futureResult.whenFailure { _ in channel.close(promise: nil) }
                let tunnel = channel.eventLoop.makePromise(of: Void.self)
                if addressGuard != nil {
                    // The address connected to was checked above; the socket's peer is checked
                    // as well, so that no request byte can reach an address the policy refuses.
                    PeerAddressCheck.check(channel).cascade(to: tunnel)
                } else if let proxy {
                    do {
                        let handler = ConnectTunnel(target: origin.hostPort, proxy: proxy, promise: tunnel)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    } catch {
                        tunnel.fail(error)
                    }
                } else {
                    tunnel.succeed()
                }
                return tunnel.futureResult.flatMap { () -> EventLoopFuture<Ready> in
                    do {
                        if let tls {
                            let serverName = Self.isIPAddress(origin.host) ? nil : origin.host
                            try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        }
                        return try configure(channel)
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }
            .cascade(to: promise)
        return promise.futureResult
    }

    /// The addresses of `origin`'s host, every one of them a global address; throws
    /// `PeerAddressRefused` when any is not (a name answering a public and a loopback address is
    /// refused: the next lookup could answer the loopback one alone), and the resolver's error when
    /// the name does not resolve now.
    static func checkedAddresses(of origin: UpstreamOrigin, resolver: HostResolver) async throws -> [SocketAddress] {
        let answers: [String]
        switch await resolver.resolve(origin.host, origin.port) {
        case .success(let found) where !found.isEmpty: answers = found
        case .success: throw NetworkAddress.ResolutionError(host: origin.host, reason: "no addresses")
        case .failure(let error): throw error
        }
        if case .nonPublic(let name) = NetworkAddress.classify(addresses: answers) {
            throw PeerAddressRefused(reason: "endpoint resolves to a \(name) address")
        }
        var addresses: [SocketAddress] = []
        for answer in answers {
            guard let address = try? SocketAddress(ipAddress: answer, port: origin.port) else {
                throw PeerAddressRefused(reason: "endpoint resolves to an unparsable address")
            }
            addresses.append(address)
        }
        return addresses
    }

    private static func bootstrap(_ loop: any EventLoop, _ connectTimeout: TimeAmount) -> ClientBootstrap {
        ClientBootstrap(group: loop).connectTimeout(connectTimeout).channelOption(.socketOption(.tcp_nodelay), value: 1)
    }

    /// Connects to the first of `addresses` that accepts, in the resolver's order, trying the next
    /// one only before `deadline`; fails with the last attempt's error.
    private static func connectFirst(
        _ addresses: ArraySlice<SocketAddress>, on loop: any EventLoop, timeout: TimeAmount, until deadline: NIODeadline
    ) -> EventLoopFuture<any Channel> {
        guard let first = addresses.first else { return loop.makeFailedFuture(UpstreamConnectionError.connectTimeout) }
        let rest = addresses.dropFirst()
        return bootstrap(loop, timeout).connect(to: first).flatMapError { error in
            guard !rest.isEmpty, loop.now < deadline else { return loop.makeFailedFuture(error) }
            return connectFirst(rest, on: loop, timeout: timeout, until: deadline)
        }
    }

    private static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}
