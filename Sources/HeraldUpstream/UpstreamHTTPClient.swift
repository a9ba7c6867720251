import AsyncHTTPClient
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOSSL
import Tracing

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

    package init(
        maxConnections: Int = 20, connectTimeout: Duration = .seconds(5), requestTimeout: Duration = .seconds(10),
        proxy: ProxySettings? = nil, trustedCAFiles: [String] = [], maxResponseBytes: Int = 64 * 1024
    ) {
        self.maxConnections = maxConnections
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.proxy = proxy
        self.trustedCAFiles = trustedCAFiles
        self.maxResponseBytes = maxResponseBytes
    }

    /// Reads `max_connections`, `connect_timeout`, `request_timeout` and `tls_ca_file` of an app.
    package static func read(from config: ConfigSection, proxy: ProxySettings?, defaults: UpstreamSettings = UpstreamSettings())
        -> UpstreamSettings
    {
        var settings = defaults
        settings.maxConnections = config.int("max_connections", default: defaults.maxConnections, range: 1...10_000)
        settings.connectTimeout = config.seconds("connect_timeout", default: defaults.connectTimeout.seconds, range: 0.001...300)
        settings.requestTimeout = config.seconds("request_timeout", default: defaults.requestTimeout.seconds, range: 0.001...300)
        if let ca = config.readableFile("tls_ca_file", required: false) { settings.trustedCAFiles = [ca] }
        settings.proxy = proxy
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

/// A pooled HTTP client for one pushkin, with its own connection limit and timeouts. Every request
/// carries `User-Agent: Herald/<version>` unless the caller set one.
package final class UpstreamHTTPClient: UpstreamTransport {
    package let settings: UpstreamSettings
    private let client: HTTPClient
    /// Without the proxy, for the hosts of `NO_PROXY` (only when both are set).
    private let direct: HTTPClient?

    package init(
        settings: UpstreamSettings, tls: TLSConfiguration = .makeClientConfiguration(),
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic
    ) throws {
        self.settings = settings
        var tls = tls
        if !settings.trustedCAFiles.isEmpty {
            tls.additionalTrustRoots = settings.trustedCAFiles.map { .file($0) }
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .init(settings.connectTimeout), read: .init(settings.requestTimeout)),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: settings.maxConnections),
            proxy: settings.proxy.map { proxy in
                if let user = proxy.username, let password = proxy.password {
                    return .server(host: proxy.host, port: proxy.port, authorization: .basic(username: user, password: password))
                }
                return .server(host: proxy.host, port: proxy.port)
            },
            decompression: .disabled
        )
        configuration.httpVersion = httpVersion
        // Without a tracer of Herald's (`tracing:` off), the client makes no spans at all, instead of
        // building each request's attributes for a tracer that drops them.
        if InstrumentationSystem.tracer is NoOpTracer { configuration.tracing.tracer = nil }
        // A refused or reset connection fails at once and goes to Herald's retry policy, instead of
        // being retried inside the client until the connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        if let proxy = settings.proxy, !proxy.noProxy.isEmpty {
            configuration.proxy = nil
            self.direct = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        } else {
            self.direct = nil
        }
    }

    /// Sends one request and reads at most `maxResponseBytes` of the answer. Throws on network
    /// errors and timeouts.
    package func send(method: HTTPMethod = .POST, url: String, headers: HTTPHeaders, body: ByteBuffer?) async throws -> UpstreamResponse {
        try await send(UpstreamRequest(method: method, url: url, headers: headers, body: body))
    }

    package func send(_ upstream: UpstreamRequest) async throws -> UpstreamResponse {
        var request = HTTPClientRequest(url: upstream.url)
        request.method = upstream.method
        request.headers = upstream.headers
        if !request.headers.contains(name: "user-agent") { request.headers.add(name: "User-Agent", value: HeraldVersion.userAgent) }
        if let body = upstream.body { request.body = .bytes(body) }
        var client = self.client
        if let direct, let proxy = settings.proxy, let host = URLComponents(string: upstream.url)?.host, proxy.bypasses(host) {
            client = direct
        }
        let settings = self.settings
        let request2 = request
        // `request_timeout` bounds the whole exchange, body included: a server trickling its answer
        // a byte at a time cannot hold a request (the client's own timeouts restart with each byte).
        return try await Deadline.run(within: settings.requestTimeout) { [client] in
            let response = try await client.execute(request2, timeout: .init(settings.requestTimeout))
            var collected = ByteBuffer()
            for try await var chunk in response.body {
                let room = settings.maxResponseBytes - collected.readableBytes
                if room > 0, let slice = chunk.readSlice(length: min(room, chunk.readableBytes)) {
                    var slice = slice
                    collected.writeBuffer(&slice)
                }
            }
            return UpstreamResponse(status: Int(response.status.code), headers: response.headers, body: collected)
        }
    }

    package func shutdown() async {
        try? await client.shutdown()
        try? await direct?.shutdown()
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
