package import DeliveryRecord
import Foundation
package import HeraldCore
package import HeraldUpstream
package import Logging
package import OrderedCollections
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
        /// Load balancers whose `X-Forwarded-For` names a request's source (docs/operations.md, "Sources").
        package var trustedProxies: [IPNetwork] = []
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

    /// `notify:`: repeats and the answer's deadline (docs/operations.md, "Once"), and the sources'
    /// rates.
    package struct Notify: Sendable {
        /// The delivery record's and the answer deadline's settings.
        package var record = RecordSettings()
        /// `notify.sources`: notifies a second per source (docs/operations.md, "Sources").
        var sources = SourceRates()
    }

    /// `admin:`: Herald's own routes on the metrics listener (the delivery trace).
    package struct Admin: Sendable {
        /// When set, `Authorization: Bearer <token>` is required (`token_file`).
        package var token: String?
        package var tokenFile: String?
    }

    package struct App: Sendable {
        package var key: String
        package var type: String
        package var inflightRequestLimit: Int
        /// Pushes a minute to one device at most (0: no limit; docs/operations.md, "Sources").
        package var perDevicePerMinute = 240
    }

    package var http = HTTP()
    package var log = Log()
    package var prometheus = Prometheus()
    package var tracing = Tracing()
    package var proxy: ProxySettings?
    package var notify = Notify()
    package var admin = Admin()
    /// Each app's type and limit; the pushkin-specific keys are read when pushkins are built.
    package var apps: [App] = []
    /// The raw `apps:` section, in file order.
    package var rawApps: OrderedDictionary<String, ConfigValue> = [:]
    /// Every other top-level section, for the front ends (`status:`); the gateway warns about
    /// those no front end reads.
    package var extraSections: OrderedDictionary<String, ConfigValue> = [:]
}

extension GatewayConfig {
    static let coreSections: Set<String> = [
        "http", "log", "metrics", "tracing", "proxy", "no_proxy", "apps", "database", "db", "notify", "admin",
    ]

    /// Parses the config's generic sections, each by its own reader (GatewayConfig+Sections.swift).
    /// Pushkin keys are validated separately, by the pushkins; front-end sections by their front ends.
    package static func read(_ root: ConfigValue, diagnostics: ConfigDiagnostics, environment: [String: String]) -> GatewayConfig {
        var config = GatewayConfig()
        guard case .map(let top) = root else {
            diagnostics.error("(top level)", "expected a mapping, got \(root.typeName)")
            return config
        }
        let reader = ConfigSection(path: "", values: top, diagnostics: diagnostics)
        if let http = reader.map("http") { config.http = HTTP.read(http) }
        if config.http.bindAddresses.isEmpty { diagnostics.error("http.bind_addresses", "must name at least one address") }
        if let log = reader.map("log") { config.log = Log.read(log) }
        if let metrics = reader.map("metrics") { config.prometheus = Prometheus.read(metrics) }
        if let tracing = reader.map("tracing") { config.tracing = Tracing.read(tracing) }
        if let notify = reader.map("notify") { config.notify = Notify.read(notify) }
        if let admin = reader.map("admin") { config.admin = Admin.read(admin) }
        config.proxy = readProxy(reader, environment: environment)
        for legacy in ["database", "db"] where reader.raw(legacy) != nil {
            diagnostics.warning(legacy, "Herald keeps no database for Matrix; section ignored")
        }
        if let apps = reader.map("apps") { (config.apps, config.rawApps) = readApps(apps) }
        if config.apps.isEmpty { diagnostics.error("apps", "No app IDs are configured") }
        for key in top.keys where !coreSections.contains(key) {
            config.extraSections[key] = reader.raw(key) ?? .null
        }
        return config
    }
}
