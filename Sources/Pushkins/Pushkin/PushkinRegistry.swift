package import HeraldCore
package import OrderedCollections

/// Builds pushkins by their config `type`. A new provider is one `register` call in `standard`.
package struct PushkinRegistry: Sendable {
    package typealias Builder =
        @Sendable (_ name: String, _ config: ConfigSection, _ environment: PushkinEnvironment) throws -> (any Pushkin)?

    private var builders: [PushkinType: Builder] = [:]
    /// How the pushkins built here resolve host names for their endpoint checks (tests stage DNS
    /// answers through it).
    package var hostResolver: HostResolver = .system

    package init() {}

    package mutating func register(_ type: PushkinType, _ builder: @escaping Builder) {
        builders[type] = builder
    }

    package var types: [PushkinType] { builders.keys.sorted() }

    package func builder(for type: PushkinType) -> Builder? { builders[type] }

    /// The providers shipped with Herald.
    package static var standard: PushkinRegistry {
        var registry = PushkinRegistry()
        registry.register(.webPush) { name, config, environment in
            guard let settings = WebPushConfig.read(config, environment: environment) else { return nil }
            return try WebPushPushkin(name: name, config: settings, environment: environment)
        }
        registry.register(.apns) { name, config, environment in
            guard let settings = APNsConfig.read(config, environment: environment) else { return nil }
            return try APNsPushkin(name: name, config: settings, environment: environment)
        }
        registry.register(.unifiedPush) { name, config, environment in
            guard let settings = UnifiedPushConfig.read(config, environment: environment) else { return nil }
            return try UnifiedPushPushkin(name: name, config: settings, environment: environment)
        }
        registry.register(.gcm) { name, config, environment in
            guard let settings = FCMConfig.read(config, environment: environment) else { return nil }
            return try FCMPushkin(name: name, config: settings, environment: environment)
        }
        registry.register(.hms) { name, config, environment in
            guard let settings = HMSConfig.read(config, environment: environment) else { return nil }
            return try HMSPushkin(name: name, config: settings, environment: environment)
        }
        return registry
    }

    /// Builds one pushkin per entry of the `apps:` section, in file order. Problems go to
    /// `diagnostics` with their key paths; an app whose keys are wrong is left out. `sharedKeys`
    /// are app keys read by others (the gateway's `inflight_request_limit`), not unknown.
    package func build(
        apps: OrderedDictionary<String, ConfigValue>, sharedKeys: [String], environment: PushkinEnvironment,
        diagnostics: ConfigDiagnostics
    ) -> [any Pushkin] {
        var pushkins: [any Pushkin] = []
        let section = ConfigSection(path: "apps", values: [:], diagnostics: diagnostics)
        for (key, value) in apps {
            guard case .map(let values) = value else { continue }
            let app = ConfigSection(path: section.keyPath(key), values: values, diagnostics: diagnostics)
            app.accept(["type"] + sharedKeys)
            // `type` itself is validated with the rest of the config; here it only picks the builder.
            guard case .string(let type)? = app.raw("type") else { continue }
            guard let builder = builder(for: PushkinType(type)) else {
                if !type.isEmpty {
                    diagnostics.error(
                        app.keyPath("type"), "unknown pushkin type '\(type)' (available: \(types.map(\.rawValue).joined(separator: ", ")))")
                }
                continue
            }
            var appEnvironment = environment
            appEnvironment.logger[metadataKey: "pushkin"] = "\(key)"
            appEnvironment.hostResolver = hostResolver
            do {
                if let pushkin = try builder(key, app, appEnvironment) { pushkins.append(pushkin) }
            } catch {
                diagnostics.error(app.keyPath("type"), "could not start the \(type) pushkin: \(error)")
            }
            app.warnUnknownKeys()
        }
        return pushkins
    }
}
