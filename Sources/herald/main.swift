import ArgumentParser
import Foundation
import Gateway
import Pushkins

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A push gateway for Matrix homeservers (Sygnal-compatible) and Status clients.",
        subcommands: [Serve.self, CheckConfig.self, VapidKey.self],
        defaultSubcommand: Serve.self
    )
}

struct ConfigOption: ParsableArguments {
    @Option(name: .shortAndLong, help: "The YAML config file (default: $HERALD_CONF, else $SYGNAL_CONF, else ./config.yaml).")
    var config: String?

    var path: String {
        config ?? ProcessInfo.processInfo.environment["HERALD_CONF"] ?? ProcessInfo.processInfo.environment["SYGNAL_CONF"] ?? "config.yaml"
    }
}

func fail(_ lines: [String]) -> Never {
    for line in lines { FileHandle.standardError.write(Data("herald: config error: \(line)\n".utf8)) }
    exit(1)
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the gateway.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        let gateway: Gateway
        do {
            gateway = try await Bootstrap.makeGateway(configPath: options.path, bootstrapLogging: true)
        } catch {
            fail(error.lines)
        }
        do {
            try await Bootstrap.serve(gateway)
        } catch {
            FileHandle.standardError.write(Data("herald: \(error)\n".utf8))
            Foundation.exit(1)
        }
    }
}

struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config", abstract: "Validate a config file as `serve` would, without listening.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        let gateway: Gateway
        do {
            gateway = try await Bootstrap.makeGateway(configPath: options.path, readOnly: true)
        } catch {
            fail(error.lines)
        }
        for pushkin in gateway.pushkins { await pushkin.shutdown() }
        print("\(options.path): OK (\(gateway.pushkins.count) app(s): \(gateway.pushkins.map(\.name).joined(separator: ", ")))")
    }
}

struct VapidKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vapid-key", abstract: "Print each Web Push app's public VAPID key (the browser's applicationServerKey).")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        let gateway: Gateway
        do {
            gateway = try await Bootstrap.makeGateway(configPath: options.path)
        } catch {
            fail(error.lines)
        }
        for pushkin in gateway.pushkins {
            if let key = pushkin.startupDetails["application_server_key"] { print("\(pushkin.name): \(key)") }
        }
        for pushkin in gateway.pushkins { await pushkin.shutdown() }
    }
}
