import Foundation
import HeraldCore
import HeraldUpstream
import Logging
import OrderedCollections

/// The readers of the gateway's own config sections, one each: `http`, `log`, `metrics`,
/// `tracing`, the outbound proxy and `apps` (docs/configuration.md lists every key).
extension GatewayConfig.HTTP {
    static func read(_ http: ConfigSection) -> Self {
        var config = Self()
        if let addresses = http.stringList("bind_addresses") { config.bindAddresses = addresses }
        config.port = http.int("port", default: 5000, range: 0...65535)
        config.maxRequestBodyBytes = http.int("max_request_body_bytes", default: 512 * 1024, range: 1024...(64 << 20))
        config.maxDiscardedBodyBytes = http.int("max_discarded_body_bytes", default: 8 << 20, range: 0...(1 << 30))
        config.idleTimeout = http.seconds("idle_timeout", default: 75, range: 1...3600)
        config.maxConnections = http.int("max_connections", default: 10_000, range: 1...1_000_000)
        config.requestReadTimeout = http.seconds("request_read_timeout", default: 30, range: 0.1...3600)
        config.maxBufferedBodyBytes = http.int("max_buffered_body_bytes", default: 256 << 20, range: 1024...(64 << 30))
        config.shutdownGracePeriod = http.seconds("shutdown_grace_period", default: 30, range: 0...3600)
        config.reusePort = http.bool("reuse_port", default: false)
        config.reusePortHandover = http.seconds("reuse_port_handover", default: 0.5, range: 0...60)
        config.shutdownFirstRequestWait = http.seconds("shutdown_first_request_wait", default: 2, range: 0...60)
        for entry in http.stringList("trusted_proxies") ?? [] {
            guard let network = IPNetwork(entry) else {
                http.diagnostics.error(http.keyPath("trusted_proxies"), "'\(entry)' is not an address or a CIDR network")
                continue
            }
            if network.includesPublicAddresses {
                http.diagnostics.warning(
                    http.keyPath("trusted_proxies"),
                    "'\(entry)' includes public addresses: any client there can name any source in X-Forwarded-For")
            }
            config.trustedProxies.append(network)
        }
        http.warnUnknownKeys()
        return config
    }
}

extension GatewayConfig.Notify {
    static func read(_ notify: ConfigSection) -> Self {
        var config = Self()
        config.record.repeatWindow = notify.seconds("repeat_window", default: 7200, range: 0...604_800)
        if let store = notify.string("repeat_store"), store != "memory" {
            if GatewayConfig.isPostgresURL(store) {
                config.record.repeatStore = store
            } else {
                notify.diagnostics.error(notify.keyPath("repeat_store"), "must be memory or a postgres:// URL")
            }
        }
        config.record.repeatMaxEntries = notify.int("repeat_max_entries", default: 200_000, range: 1...100_000_000)
        config.record.repeatMaxBytes = notify.int("repeat_max_bytes", default: 32 << 20, range: 4096...(16 << 30))
        config.record.repeatTakeover = notify.seconds("repeat_takeover", default: 60, range: 1...3600)
        config.record.repeatStoreTimeout = notify.seconds("repeat_store_timeout", default: 1, range: 0.05...60)
        config.record.repeatStoreMaxConnections = notify.int("repeat_store_max_connections", default: 8, range: 1...1000)
        config.record.answerWithin = notify.seconds("answer_within", default: 20, range: 0...300)
        config.record.heardWithin = notify.seconds("heard_within", default: 2, range: 0...60)
        if let sources = notify.map("sources") { config.sources = SourceRates.read(sources) }
        config.record.traceMaxBytes = notify.int("trace_max_bytes", default: 8 << 20, range: 0...(16 << 30))
        notify.warnUnknownKeys()
        return config
    }
}

extension GatewayConfig.Admin {
    static func read(_ admin: ConfigSection) -> Self {
        var config = Self()
        if let file = admin.readableFile("token_file", required: false) {
            let token = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            if token.isEmpty {
                admin.diagnostics.error(admin.keyPath("token_file"), "'\(file)' holds no token")
            } else {
                config.token = token
                config.tokenFile = file
            }
        }
        admin.warnUnknownKeys()
        return config
    }
}

extension GatewayConfig.Log {
    static func read(_ log: ConfigSection) -> Self {
        var config = Self()
        if let format = log.string("format") {
            if let parsed = Format(rawValue: format) {
                config.format = parsed
            } else {
                log.diagnostics.error(log.keyPath("format"), "must be plain or json, got '\(format)'")
            }
        }
        if let level = log.string("level") {
            if let parsed = Logger.Level(rawValue: level.lowercased()) {
                config.level = parsed
            } else {
                log.diagnostics.error(log.keyPath("level"), "must be one of trace, debug, info, notice, warning, error, critical")
            }
        }
        // Sygnal's Python logging dictConfig is accepted; its root level counts when no `level` is set.
        if case .map(let setup)? = log.raw("setup"), !log.has("level"),
            case .map(let root)? = setup["root"], case .string(let level)? = root["level"],
            let parsed = Logger.Level(rawValue: level.lowercased())
        {
            config.level = parsed
        }
        if let access = log.map("access") {
            config.accessLog = access.bool("enabled", default: false)
            // Sygnal's other access-log keys: accepted, not used (Sygnal ignores them too).
            access.accept("x_forwarded_for", "file")
            access.warnUnknownKeys()
        }
        log.warnUnknownKeys()
        return config
    }
}

extension GatewayConfig.Prometheus {
    /// From the `metrics:` section: `prometheus`, and Sygnal's `opentracing` and `sentry`, which
    /// are accepted and warned about when enabled.
    static func read(_ metrics: ConfigSection) -> Self {
        var config = Self()
        if let prometheus = metrics.map("prometheus") {
            config.enabled = prometheus.bool("enabled", default: false)
            config.address = prometheus.string("address") ?? "127.0.0.1"
            config.port = prometheus.int("port", default: 8000, range: 0...65535)
            prometheus.warnUnknownKeys()
        }
        for unsupported in ["opentracing", "sentry"] {
            if let section = metrics.map(unsupported) {
                for key in section.keys { _ = section.raw(key) }
                if section.bool("enabled", default: false) {
                    metrics.diagnostics.warning(section.keyPath("enabled"), "\(unsupported) is not supported by Herald; ignored")
                }
            }
        }
        metrics.warnUnknownKeys()
        return config
    }
}

extension GatewayConfig.Tracing {
    static func read(_ tracing: ConfigSection) -> Self {
        var config = Self()
        config.enabled = tracing.bool("enabled", default: false)
        if let endpoint = tracing.string("endpoint"), !endpoint.isEmpty { config.endpoint = endpoint }
        config.serviceName = tracing.string("service_name") ?? "herald"
        config.sampleRatio = Double(tracing.int("sample_percent", default: 100, range: 0...100)) / 100
        config.exportInterval = tracing.seconds("export_interval", default: 5, range: 0.01...600)
        switch tracing.string("protocol") ?? "http/protobuf" {
        case "http/protobuf": config.json = false
        case "http/json": config.json = true
        case let other: tracing.diagnostics.error(tracing.keyPath("protocol"), "must be http/protobuf or http/json, got '\(other)'")
        }
        tracing.warnUnknownKeys()
        return config
    }
}

extension GatewayConfig {
    /// `proxy` and `no_proxy`, else `HTTPS_PROXY` and `NO_PROXY` from the environment.
    static func readProxy(_ reader: ConfigSection, environment: [String: String]) -> ProxySettings? {
        let proxyURL = reader.string("proxy") ?? environment["HTTPS_PROXY"] ?? environment["https_proxy"]
        let noProxy = reader.stringList("no_proxy") ?? ProxySettings.noProxyList(environment["NO_PROXY"] ?? environment["no_proxy"])
        guard let proxyURL, !proxyURL.isEmpty else { return nil }
        switch ProxySettings.parse(proxyURL) {
        case .success(var proxy):
            proxy.noProxy = noProxy
            return proxy
        case .failure(let error):
            reader.diagnostics.error(reader.has("proxy") ? "proxy" : "HTTPS_PROXY", "invalid proxy URL: \(error.reason)")
            return nil
        }
    }

    /// Each app's type and in-flight limit, and the raw section in file order (the pushkins read
    /// their own keys when they are built).
    static func readApps(_ apps: ConfigSection) -> ([App], OrderedDictionary<String, ConfigValue>) {
        var list: [App] = []
        var raw: OrderedDictionary<String, ConfigValue> = [:]
        for key in apps.keys {
            guard case .map(let values)? = apps.raw(key) else {
                apps.diagnostics.error(apps.keyPath(key), "expected a mapping of app settings")
                continue
            }
            let app = ConfigSection(path: apps.keyPath(key), values: values, diagnostics: apps.diagnostics)
            let type = app.string("type", required: true) ?? ""
            let limit = app.int("inflight_request_limit", default: 512, range: 1...1_000_000)
            let budget = app.int("per_device_per_minute", default: 240, range: 0...1_000_000)
            list.append(App(key: key, type: type, inflightRequestLimit: limit, perDevicePerMinute: budget))
            raw[key] = .map(values)
        }
        return (list, raw)
    }
}
