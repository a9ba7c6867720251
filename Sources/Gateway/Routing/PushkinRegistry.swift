import Pushkins

/// Builds pushkins by their config `type`. A provider is one entry here.
public struct PushkinRegistry: Sendable {
    public typealias Builder =
        @Sendable (_ name: String, _ config: ConfigReader, _ environment: PushkinEnvironment) throws -> (any Pushkin)?

    private var builders: [String: Builder] = [:]

    public init() {}

    public mutating func register(_ type: String, _ builder: @escaping Builder) {
        builders[type] = builder
    }

    public var types: [String] { builders.keys.sorted() }

    public func builder(for type: String) -> Builder? { builders[type] }

    /// The providers shipped with Herald.
    public static var standard: PushkinRegistry {
        var registry = PushkinRegistry()
        registry.register("webpush") { name, config, environment in
            guard let settings = WebPushConfig.read(config, environment: environment) else { return nil }
            return try WebPushPushkin(name: name, config: settings, environment: environment)
        }
        registry.register("apns") { name, config, environment in
            guard let settings = APNsConfig.read(config, environment: environment) else { return nil }
            return try APNsPushkin(name: name, config: settings, environment: environment)
        }
        registry.register("gcm") { name, config, environment in
            guard let settings = FCMConfig.read(config, environment: environment) else { return nil }
            return try FCMPushkin(name: name, config: settings, environment: environment)
        }
        return registry
    }
}
