import Foundation
import Logging
import Pushkins
import ServiceLifecycle

/// Loading a config file into a started gateway, as `herald serve` and `herald check-config` do.
public enum Bootstrap {
    public struct StartupError: Error, CustomStringConvertible {
        public var lines: [String]
        public var description: String { lines.joined(separator: "\n") }
    }

    /// Loads and validates the config and builds the gateway (pushkins included) without binding.
    public static func makeGateway(
        configPath: String, registry: PushkinRegistry = .standard, bootstrapLogging: Bool = false, readOnly: Bool = false
    ) async throws(StartupError) -> Gateway {
        let (config, diagnostics): (GatewayConfig, ConfigDiagnostics)
        do {
            (config, diagnostics) = try ConfigLoading.load(path: configPath)
        } catch {
            throw StartupError(lines: error.errors)
        }
        if bootstrapLogging { bootstrapLogger(config.log) }
        let logger = Logger(label: "herald")
        let gateway = Gateway(config: config, diagnostics: diagnostics, registry: registry, logger: logger, readOnly: readOnly)
        for warning in diagnostics.warnings { logger.warning("Config: \(warning)") }
        if !diagnostics.errors.isEmpty {
            for pushkin in gateway.pushkins { await pushkin.shutdown() }
            throw StartupError(lines: diagnostics.errors)
        }
        return gateway
    }

    public static func bootstrapLogger(_ log: GatewayConfig.Log) {
        LoggingSystem.bootstrap { label in
            HeraldLogHandler(label: label, format: log.format == .json ? .json : .plain, level: log.level)
        }
    }

    /// Runs until SIGTERM or SIGINT, then drains.
    public static func serve(_ gateway: Gateway) async throws {
        try await gateway.start()
        let group = ServiceGroup(
            services: [GatewayService(gateway: gateway)], gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [], logger: Logger(label: "herald.lifecycle"))
        try await group.run()
    }
}

/// Runs a started gateway as a service-lifecycle service.
struct GatewayService: Service {
    let gateway: Gateway

    func run() async throws {
        await withGracefulShutdownHandler {
            await gateway.run()
        } onGracefulShutdown: {
            Task { await gateway.shutdown() }
        }
    }
}
