import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import Logging
import OrderedCollections
import Pushkins

/// The whole config file: Sygnal's sections (docs/compatibility/matrix.md, "Configuration") plus Herald's additions, validated at
/// start-up with every problem named by its key path.
package struct GatewayConfig: Sendable {
    package struct HTTP: Sendable {
        package var bindAddresses: [String] = ["127.0.0.1"]
        package var port: Int = 5000
        package var maxRequestBodyBytes: Int = 512 * 1024
        /// After a 413, how much of the refused body is read and thrown away so the client reads
        /// the answer before the connection closes.
        package var maxDiscardedBodyBytes: Int = 8 << 20
        /// Connections open at once on each listener.
        package var maxConnections = 10_000
        /// From a request's first byte to its last: a trickling client is answered 408 and cut.
        package var requestReadTimeout: Duration = .seconds(30)
        /// Request-body bytes held in memory across all connections; beyond, 503 with `Retry-After`.
        package var maxBufferedBodyBytes = 256 << 20
        package var idleTimeout: Duration = .seconds(75)
        package var shutdownGracePeriod: Duration = .seconds(30)
        /// `SO_REUSEPORT` on the listeners, for rolling restarts.
        package var reusePort = false
        /// With `reusePort`: how long a stopping Herald keeps accepting after handing new
        /// connections over to its successor.
        package var reusePortHandover: Duration = .milliseconds(500)
        /// On shutdown, how long a connection accepted but without a request yet gets to start one.
        package var shutdownFirstRequestWait: Duration = .seconds(2)
    }

    package struct Log: Sendable {
        package enum Format: String, Sendable { case plain, json }
        package var format: Format = .plain
        package var level: Logger.Level = .info
        /// `log.access.enabled`: a line per HTTP request under `herald.access`.
        package var accessLog = false
    }

    /// `tracing:`: OpenTelemetry spans exported over OTLP/HTTP.
    package struct Tracing: Sendable {
        package var enabled = false
        package var endpoint = "http://127.0.0.1:4318/v1/traces"
        package var serviceName = "herald"
        package var sampleRatio = 1.0
        package var exportInterval: Duration = .seconds(5)
        /// OTLP/HTTP with JSON bodies instead of protobuf.
        package var json = false
    }

    package struct Prometheus: Sendable {
        package var enabled = false
        package var address = "127.0.0.1"
        package var port = 8000
    }

    package struct App: Sendable {
        package var key: String
        package var type: String
        package var inflightRequestLimit: Int
    }

    package var http = HTTP()
    package var log = Log()
    package var prometheus = Prometheus()
    package var tracing = Tracing()
    package var proxy: ProxySettings?
    /// Each app's type and limit; the pushkin-specific keys are read when pushkins are built.
    package var apps: [App] = []
    /// The raw `apps:` section, in file order.
    package var rawApps: OrderedDictionary<String, ConfigValue> = [:]
    /// Every other top-level section, for the front ends (`status:`); the gateway warns about
    /// those no front end reads.
    package var extraSections: OrderedDictionary<String, ConfigValue> = [:]
}

extension GatewayConfig {
    static let coreSections: Set<String> = ["http", "log", "metrics", "tracing", "proxy", "no_proxy", "apps", "database", "db"]

    /// Parses the config's generic sections. Pushkin keys are validated separately, by the pushkins.
    package static func read(_ root: ConfigValue, diagnostics: ConfigDiagnostics, environment: [String: String]) -> GatewayConfig {
        var config = GatewayConfig()
        guard case .map(let top) = root else {
            diagnostics.error("(top level)", "expected a mapping, got \(root.typeName)")
            return config
        }
        let reader = ConfigSection(path: "", values: top, diagnostics: diagnostics)

        if let http = reader.map("http") {
            if let addresses = http.stringList("bind_addresses") { config.http.bindAddresses = addresses }
            config.http.port = http.int("port", default: 5000, range: 0...65535)
            config.http.maxRequestBodyBytes = http.int("max_request_body_bytes", default: 512 * 1024, range: 1024...(64 << 20))
            config.http.maxDiscardedBodyBytes = http.int("max_discarded_body_bytes", default: 8 << 20, range: 0...(1 << 30))
            config.http.idleTimeout = http.seconds("idle_timeout", default: 75, range: 1...3600)
            config.http.maxConnections = http.int("max_connections", default: 10_000, range: 1...1_000_000)
            config.http.requestReadTimeout = http.seconds("request_read_timeout", default: 30, range: 0.1...3600)
            config.http.maxBufferedBodyBytes = http.int("max_buffered_body_bytes", default: 256 << 20, range: 1024...(64 << 30))
            config.http.shutdownGracePeriod = http.seconds("shutdown_grace_period", default: 30, range: 0...3600)
            config.http.reusePort = http.bool("reuse_port", default: false)
            config.http.reusePortHandover = http.seconds("reuse_port_handover", default: 0.5, range: 0...60)
            config.http.shutdownFirstRequestWait = http.seconds("shutdown_first_request_wait", default: 2, range: 0...60)
            http.warnUnknownKeys()
        }
        if config.http.bindAddresses.isEmpty { diagnostics.error("http.bind_addresses", "must name at least one address") }

        if let log = reader.map("log") {
            if let format = log.string("format") {
                if let parsed = Log.Format(rawValue: format) {
                    config.log.format = parsed
                } else {
                    diagnostics.error(log.keyPath("format"), "must be plain or json, got '\(format)'")
                }
            }
            if let level = log.string("level") {
                if let parsed = Logger.Level(rawValue: level.lowercased()) {
                    config.log.level = parsed
                } else {
                    diagnostics.error(log.keyPath("level"), "must be one of trace, debug, info, notice, warning, error, critical")
                }
            }
            // Sygnal's Python logging dictConfig is accepted; its root level counts when no `level` is set.
            if case .map(let setup)? = log.raw("setup"), !log.has("level"),
                case .map(let root)? = setup["root"], case .string(let level)? = root["level"],
                let parsed = Logger.Level(rawValue: level.lowercased())
            {
                config.log.level = parsed
            }
            if let access = log.map("access") {
                config.log.accessLog = access.bool("enabled", default: false)
                // Sygnal's other access-log keys: accepted, not used (Sygnal ignores them too).
                access.accept("x_forwarded_for", "file")
                access.warnUnknownKeys()
            }
            log.warnUnknownKeys()
        }

        if let metrics = reader.map("metrics") {
            if let prometheus = metrics.map("prometheus") {
                config.prometheus.enabled = prometheus.bool("enabled", default: false)
                config.prometheus.address = prometheus.string("address") ?? "127.0.0.1"
                config.prometheus.port = prometheus.int("port", default: 8000, range: 0...65535)
                prometheus.warnUnknownKeys()
            }
            for unsupported in ["opentracing", "sentry"] {
                if let section = metrics.map(unsupported) {
                    for key in section.keys { _ = section.raw(key) }
                    if section.bool("enabled", default: false) {
                        diagnostics.warning(section.keyPath("enabled"), "\(unsupported) is not supported by Herald; ignored")
                    }
                }
            }
            metrics.warnUnknownKeys()
        }

        if let tracing = reader.map("tracing") {
            config.tracing.enabled = tracing.bool("enabled", default: false)
            if let endpoint = tracing.string("endpoint"), !endpoint.isEmpty { config.tracing.endpoint = endpoint }
            config.tracing.serviceName = tracing.string("service_name") ?? "herald"
            config.tracing.sampleRatio = Double(tracing.int("sample_percent", default: 100, range: 0...100)) / 100
            config.tracing.exportInterval = tracing.seconds("export_interval", default: 5, range: 0.01...600)
            switch tracing.string("protocol") ?? "http/protobuf" {
            case "http/protobuf": config.tracing.json = false
            case "http/json": config.tracing.json = true
            case let other: diagnostics.error(tracing.keyPath("protocol"), "must be http/protobuf or http/json, got '\(other)'")
            }
            tracing.warnUnknownKeys()
        }

        let proxyURL = reader.string("proxy") ?? environment["HTTPS_PROXY"] ?? environment["https_proxy"]
        let noProxy = reader.stringList("no_proxy") ?? ProxySettings.noProxyList(environment["NO_PROXY"] ?? environment["no_proxy"])
        if let proxyURL, !proxyURL.isEmpty {
            switch ProxySettings.parse(proxyURL) {
            case .success(var proxy):
                proxy.noProxy = noProxy
                config.proxy = proxy
            case .failure(let error): diagnostics.error(reader.has("proxy") ? "proxy" : "HTTPS_PROXY", "invalid proxy URL: \(error.reason)")
            }
        }

        for legacy in ["database", "db"] where reader.raw(legacy) != nil {
            diagnostics.warning(legacy, "Herald keeps no database for Matrix; section ignored")
        }

        if let apps = reader.map("apps") {
            for key in apps.keys {
                guard case .map(let values)? = apps.raw(key) else {
                    diagnostics.error(apps.keyPath(key), "expected a mapping of app settings")
                    continue
                }
                let app = ConfigSection(path: apps.keyPath(key), values: values, diagnostics: diagnostics)
                let type = app.string("type", required: true) ?? ""
                let limit = app.int("inflight_request_limit", default: 512, range: 1...1_000_000)
                config.apps.append(App(key: key, type: type, inflightRequestLimit: limit))
                config.rawApps[key] = .map(values)
            }
        }
        if config.apps.isEmpty { diagnostics.error("apps", "No app IDs are configured") }

        for key in top.keys where !coreSections.contains(key) {
            config.extraSections[key] = reader.raw(key) ?? .null
        }
        return config
    }
}
