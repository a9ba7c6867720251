import FoundationEssentials
package import HeraldCore
package import NIOCore
package import NIOHTTP1
import NIOSSL

/// Connection and timeout settings shared by the HTTP-based pushkins.
package struct UpstreamSettings: Sendable {
    package var maxConnections: Int
    package var connectTimeout: Duration
    package var requestTimeout: Duration
    package var proxy: ProxySettings?
    /// Extra PEM CA files to trust (APNs-compatible test servers, private push services).
    package var trustedCAFiles: [String]
    /// How much of a response body is read (for error reasons); the rest is discarded.
    package var maxResponseBytes: Int
    /// Whether an https origin is offered HTTP/2 by ALPN (`http2`); HTTP/1.1 is spoken where the
    /// server does not take it (`NegotiatedUpstream`).
    package var http2: Bool
    /// The most requests in flight at once on an origin's HTTP/2 connection
    /// (`max_concurrent_streams`); the server's own `MAX_CONCURRENT_STREAMS` holds below it.
    package var maxConcurrentStreams: Int

    package init(
        maxConnections: Int = 20, connectTimeout: Duration = .seconds(5), requestTimeout: Duration = .seconds(10),
        proxy: ProxySettings? = nil, trustedCAFiles: [String] = [], maxResponseBytes: Int = 64 * 1024, http2: Bool = true,
        maxConcurrentStreams: Int = 100
    ) {
        self.http2 = http2
        self.maxConcurrentStreams = maxConcurrentStreams
        self.maxConnections = maxConnections
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.proxy = proxy
        self.trustedCAFiles = trustedCAFiles
        self.maxResponseBytes = maxResponseBytes
    }

    /// Reads `max_connections`, `connect_timeout`, `request_timeout` and `tls_ca_file` of an app,
    /// and for an upstream that may speak HTTP/2 (`multiplexed`) `http2` and
    /// `max_concurrent_streams`.
    package static func read(
        from config: ConfigSection, proxy: ProxySettings?, defaults: UpstreamSettings = UpstreamSettings(), multiplexed: Bool = false
    ) -> UpstreamSettings {
        var settings = defaults
        settings.maxConnections = config.int("max_connections", default: defaults.maxConnections, range: 1...10_000)
        settings.connectTimeout = config.seconds("connect_timeout", default: defaults.connectTimeout.seconds, range: 0.001...300)
        settings.requestTimeout = config.seconds("request_timeout", default: defaults.requestTimeout.seconds, range: 0.001...300)
        if let ca = config.readableFile("tls_ca_file", required: false) { settings.trustedCAFiles = [ca] }
        settings.proxy = proxy
        if multiplexed {
            settings.http2 = config.bool("http2", default: defaults.http2)
            settings.maxConcurrentStreams = config.int(
                "max_concurrent_streams", default: defaults.maxConcurrentStreams, range: 1...1000)
        } else {
            settings.http2 = false
        }
        return settings
    }
}

/// An outbound HTTP CONNECT proxy (`proxy:` in config, or `HTTPS_PROXY`).
package struct ProxySettings: Sendable, Equatable {
    package var host: String
    package var port: Int
    package var username: String?
    package var password: String?
    /// Hosts reached directly (`NO_PROXY` / `no_proxy`): a name matches itself and its subdomains
    /// (a leading `.` is allowed), `*` matches every host.
    package var noProxy: [String]

    package init(host: String, port: Int, username: String? = nil, password: String? = nil, noProxy: [String] = []) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.noProxy = noProxy
    }

    /// Whether `host` is reached without the proxy.
    package func bypasses(_ host: String) -> Bool {
        let host = host.lowercased()
        return noProxy.contains { entry in
            let entry = entry.lowercased().trimmingCharacters(in: .whitespaces)
            if entry == "*" { return true }
            let bare = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
            return !bare.isEmpty && (host == bare || host.hasSuffix("." + bare))
        }
    }

    /// `NO_PROXY` / `no_proxy` as a list.
    package static func noProxyList(_ value: String?) -> [String] {
        (value ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Parses `http://[user:pass@]host[:port]`; the port defaults to 80 as in Sygnal.
    package static func parse(_ url: String) -> Result<ProxySettings, ProxyURLError> {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            return .failure(ProxyURLError(reason: "not a URL"))
        }
        guard scheme == "http" else { return .failure(ProxyURLError(reason: "only http:// proxies are supported")) }
        guard let host = UpstreamOrigin.wireHost(components), !host.isEmpty else { return .failure(ProxyURLError(reason: "no host")) }
        var settings = ProxySettings(host: host, port: components.port ?? 80)
        if let user = components.user, let password = components.password {
            settings.username = user.removingPercentEncoding ?? user
            settings.password = password.removingPercentEncoding ?? password
        }
        return .success(settings)
    }
}

package struct ProxyURLError: Error, Sendable, Equatable {
    package var reason: String
}

/// A response from an upstream, with the start of its body.
package struct UpstreamResponse: Sendable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: ByteBuffer

    package var bodyText: String { String(buffer: body) }
}

/// An HTTP/1.1 client for the upstreams that are not a pushkin's one origin (OAuth token
/// endpoints, the ADAMANT nodes, gorush's feedback URL): Herald's own keep-alive pools
/// (`OriginPools`, one `HTTP1Upstream` per origin), the same stack every Web Push, UnifiedPush and
/// FCM request goes through, so that the binary carries one HTTP/1 client. Redirects are not
/// followed and bodies are not decompressed. Every request carries `User-Agent: Herald/<version>`
/// unless the caller set one. `connect_timeout` bounds a new connection and `request_timeout` the
/// exchange from the moment the request is sent, answer body included.
package final class UpstreamHTTPClient: UpstreamTransport {
    package let settings: UpstreamSettings
    private let pools: OriginPools

    package init(settings: UpstreamSettings, contexts: TLSContexts = TLSContexts()) throws {
        var settings = settings
        settings.http2 = false
        self.settings = settings
        pools = OriginPools(settings: settings, addressGuard: nil, maxOrigins: 64, contexts: contexts, clock: nil)
    }

    /// Sends one request and reads at most `maxResponseBytes` of the answer. Throws on network
    /// errors and timeouts.
    package func send(method: HTTPMethod = .POST, url: String, headers: HTTPHeaders, body: ByteBuffer?) async throws -> UpstreamResponse {
        try await send(UpstreamRequest(method: method, url: url, headers: headers, body: body))
    }

    package func send(_ upstream: UpstreamRequest) async throws -> UpstreamResponse {
        var request = upstream
        if !request.headers.contains(name: "user-agent") { request.headers.add(name: "User-Agent", value: HeraldVersion.userAgent) }
        return try await pools.send(request)
    }

    package func shutdown() async {
        await pools.shutdown()
    }
}
