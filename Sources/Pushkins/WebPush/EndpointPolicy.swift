import FoundationEssentials
package import HeraldCore
package import HeraldUpstream

/// Decides whether Herald may POST to a subscription endpoint.
///
/// Beyond Sygnal's `allowed_endpoints` globs (on `host[:port]`, case-insensitive), endpoints must
/// be https and must not resolve to loopback, private, link-local or multicast addresses, unless
/// the app sets `allow_insecure_endpoints` / `allow_private_endpoints`.
///
/// Where addresses are checked (docs/compatibility/webpush.md, "Which endpoints Herald reaches"):
/// a literal address here; a name reached directly, by the connector before it opens a
/// connection (marked `addressChecked`): it resolves the name, refuses it unless every address is
/// global and connects to those addresses only, so a name that answers differently from one
/// lookup to the next (DNS rebinding) gains nothing; a name reached through the outbound proxy,
/// which resolves it there, by resolving it here for every check (no verdict is kept).
package final class EndpointPolicy: Sendable {
    package struct Endpoint: Sendable, Equatable {
        package var url: String
        package var scheme: String
        package var host: String
        package var port: Int
        /// `host[:port]` as written in the URL: what `allowed_endpoints` globs match.
        package var netloc: String
        /// `scheme://host[:port]`: the VAPID audience.
        package var origin: String
        /// The policy classified the host's addresses: the connection's peer must pass the same check.
        package var addressChecked = false
    }

    package enum Verdict: Sendable, Equatable {
        case allowed(Endpoint)
        /// Not a usable http(s) URL: the pushkey can never work.
        case malformed(String)
        /// A valid endpoint this gateway is configured not to reach.
        case refused(String)
        /// The host name could not be resolved now (a failed or timed-out lookup): a failure of the
        /// device, which the sender retries, not a refusal.
        case unresolvable(String)
    }

    let allowedGlobs: [Glob]?
    let allowInsecure: Bool
    let allowPrivate: Bool
    let resolver: HostResolver
    let proxy: ProxySettings?

    package init(
        allowedEndpoints: [String]?, allowInsecure: Bool, allowPrivate: Bool, proxy: ProxySettings? = nil,
        resolver: HostResolver = .system
    ) {
        self.allowedGlobs = allowedEndpoints?.map { Glob($0, caseInsensitive: true) }
        self.allowInsecure = allowInsecure
        self.allowPrivate = allowPrivate
        self.proxy = proxy
        self.resolver = resolver
    }

    /// The endpoint's parts; nil for what is no http(s) URL, or has a space or control character
    /// (which Foundation's parser would take, and no push service serves). The host is the one
    /// DNS, TLS and the `Host` header use (`UpstreamOrigin.wireHost`).
    package static func parse(_ url: String) -> Endpoint? {
        guard !UpstreamOrigin.hasSpaceOrControl(url), let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let rawHost = UpstreamOrigin.wireHost(components), !rawHost.isEmpty
        else { return nil }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let hostPart = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        let netloc = components.port.map { "\(hostPart):\($0)" } ?? hostPart
        return Endpoint(
            url: url, scheme: scheme, host: host, port: components.port ?? (scheme == "https" ? 443 : 80),
            netloc: netloc, origin: "\(scheme)://\(netloc)")
    }

    package func check(_ url: String) async -> Verdict {
        guard var endpoint = Self.parse(url) else { return .malformed("endpoint is not an http(s) URL") }
        var namedExplicitly = false
        if let globs = allowedGlobs {
            guard globs.contains(where: { $0.matches(endpoint.netloc) }) else {
                return .refused("endpoint \(endpoint.netloc) is not in allowed_endpoints")
            }
            // An entry that names the host itself (no wildcard) is the operator's decision to reach
            // it, private address or not (a self-hosted push service).
            namedExplicitly = globs.contains { !$0.hasWildcards && $0.matches(endpoint.netloc) }
        }
        if endpoint.scheme != "https" && !allowInsecure {
            return .refused("endpoint is not https (set allow_insecure_endpoints to allow)")
        }
        if !allowPrivate && !namedExplicitly {
            switch await kind(of: endpoint) {
            case .success(.global): break
            case .success(.nonPublic(let name)):
                return .refused("endpoint resolves to a \(name) address (set allow_private_endpoints to allow)")
            case .failure(let error):
                return .unresolvable("endpoint host \(error.host): \(error.reason)")
            }
            endpoint.addressChecked = true
        }
        return .allowed(endpoint)
    }

    private func kind(of endpoint: Endpoint) async -> Result<NetworkAddress.Kind, NetworkAddress.ResolutionError> {
        if let literal = NetworkAddress.classify(literal: endpoint.host) { return .success(literal) }
        // Reached directly: the connector resolves and checks it, in the resolution it connects with.
        guard let proxy, !proxy.bypasses(endpoint.host) else { return .success(.global) }
        switch await resolver.resolve(endpoint.host, endpoint.port) {
        case .success(let addresses) where addresses.isEmpty:
            return .failure(NetworkAddress.ResolutionError(host: endpoint.host, reason: "no addresses"))
        case .success(let addresses): return .success(NetworkAddress.classify(addresses: addresses))
        case .failure(let error): return .failure(error)
        }
    }
}

extension EndpointPolicy {
    /// Says, for `check-config` and the start-up log, which `allowed_endpoints` entries name a host
    /// explicitly and so allow its private addresses.
    static func noteExplicitEntries(_ entries: [String]?, config: ConfigSection) {
        for entry in entries ?? [] where !Glob(entry, caseInsensitive: true).hasWildcards {
            config.diagnostics.warning(
                config.keyPath("allowed_endpoints"), "'\(entry)' names a host: it may be reached on private addresses too")
        }
    }
}
