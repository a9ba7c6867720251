import Foundation
import HeraldCore
import Logging
package import Pushkins
import ServiceLifecycle
import UnixSignals

/// Loading a config file into a gateway, as `herald serve` and `herald check-config` do.
package enum Bootstrap {
    package struct StartupError: Error, CustomStringConvertible {
        package var lines: [String]
        package var description: String { lines.joined(separator: "\n") }
    }

    /// Loads and validates the config and builds the gateway (pushkins included) without binding.
    package static func makeGateway(
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
        // Before any pushkin exists: HTTP clients take the tracer when they are made.
        var observability: (any Service)?
        if bootstrapLogging && diagnostics.errors.isEmpty {
            do {
                observability = try TracingSetup.bootstrap(config.tracing)
            } catch {
                diagnostics.error("tracing", "cannot start the exporter: \(error)")
            }
        }
        let gateway = Gateway(
            config: config, diagnostics: diagnostics, registry: registry, logger: logger, readOnly: readOnly, clock: SystemClock(),
            observability: observability)
        for warning in diagnostics.warnings { logger.warning("Config: \(warning)") }
        if !diagnostics.errors.isEmpty {
            await gateway.close()
            throw StartupError(lines: diagnostics.errors)
        }
        for pushkin in gateway.pushkins where !pushkin.startupDetails.isEmpty {
            logger.info(
                "App ready", metadata: pushkin.startupDetails.mapValues { .string($0) }.merging(["app": "\(pushkin.name)"]) { $1 })
        }
        return gateway
    }

    package static func bootstrapLogger(_ log: GatewayConfig.Log) {
        LogLevelControl.set(log.level)
        LoggingSystem.bootstrap(
            { label, provider in
                HeraldLogHandler(
                    label: label, format: log.format == .json ? .json : .plain, level: log.level, metadataProvider: provider,
                    clock: SystemClock())
            }, metadataProvider: RequestContext.metadataProvider)
    }

    /// Binds, then runs until SIGTERM or SIGINT has drained everything; SIGHUP reloads `configPath`.
    package static func serve(_ gateway: Gateway, configPath: String? = nil) async throws {
        try await gateway.start(signals: [.sigterm, .sigint], reloadPath: configPath)
        try await gateway.run()
    }
}
