import Foundation
package import HeraldCore
import Pushkins

/// Reads a config file into a `GatewayConfig`. Only unreadable files and invalid YAML throw; every
/// other problem is in the returned diagnostics, so that one run reports them all.
package enum ConfigLoading {
    package struct Failure: Error, CustomStringConvertible {
        package var errors: [String]
        package var description: String { errors.joined(separator: "\n") }
    }

    package static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(Failure) -> (
        GatewayConfig, ConfigDiagnostics
    ) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw Failure(errors: ["\(path): cannot read config file: \(error.localizedDescription)"])
        }
        return try parse(text, source: path, environment: environment)
    }

    package static func parse(_ text: String, source: String = "config", environment: [String: String] = [:]) throws(Failure) -> (
        GatewayConfig, ConfigDiagnostics
    ) {
        let root: ConfigValue
        do {
            root = try YAMLLoader.load(text)
        } catch {
            throw Failure(errors: ["\(source): \(error.description)"])
        }
        let diagnostics = ConfigDiagnostics()
        let config = GatewayConfig.read(root, diagnostics: diagnostics, environment: environment)
        return (config, diagnostics)
    }
}
