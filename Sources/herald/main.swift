import ArgumentParser
import Foundation
import Gateway
import HeraldCore

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A push gateway for Matrix homeservers (Sygnal-compatible), Status, Mastodon (a Web Push relay) and ADAMANT.",
        version: HeraldVersion.description,
        subcommands: [Serve.self, CheckConfig.self, VapidKey.self, SendTest.self, Trace.self],
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
        MallocArenas.apply(environment: ProcessInfo.processInfo.environment)
        let gateway: Gateway
        do {
            gateway = try await Bootstrap.makeGateway(configPath: options.path, bootstrapLogging: true)
        } catch {
            fail(error.lines)
        }
        do {
            try await Bootstrap.serve(gateway, configPath: options.path)
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
        await gateway.close()
        print("\(options.path): OK (\(gateway.pushkins.count) app(s): \(gateway.pushkins.map(\.name).joined(separator: ", ")))")
        for note in gateway.configNotes { print("note: \(note)") }
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
        await gateway.close()
    }
}

struct SendTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-test",
        abstract: "Send one test notification through an app's pushkin, as /notify would, and print what the upstream answered.",
        discussion: """
            Exits 0 when the upstream accepted it, 1 otherwise. For a Web Push app, give the browser's subscription \
            JSON with --subscription instead of --pushkey.
            """)
    @OptionGroup var options: ConfigOption

    @Option(name: .long, help: "The app id, as a pusher's app_id.")
    var appId: String

    @Option(name: .long, help: "The device's pushkey (APNs: base64 token; FCM: registration token; UnifiedPush: endpoint URL).")
    var pushkey: String?

    @Option(name: .long, help: "The pusher's data, as JSON (e.g. '{\"endpoint\": …, \"auth\": …}').")
    var data: String?

    @Option(name: .long, help: "A Web Push subscription as a browser gives it: {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}}.")
    var subscription: String?

    func run() async throws {
        var pushkey = self.pushkey
        var data: JSONObject = [:]
        if let text = self.data {
            guard let parsed = (try? JSONParser.parse(Array(text.utf8)))?.objectValue else { fail(["--data is not a JSON object"]) }
            data = parsed
        }
        if let text = subscription {
            guard let parsed = try? JSONParser.parse(Array(text.utf8)), let endpoint = parsed["endpoint"]?.stringValue,
                let p256dh = parsed["keys"]?["p256dh"]?.stringValue, let auth = parsed["keys"]?["auth"]?.stringValue
            else { fail(["--subscription needs endpoint, keys.p256dh and keys.auth"]) }
            pushkey = p256dh
            data["endpoint"] = .string(endpoint)
            data["auth"] = .string(auth)
        }
        guard let pushkey else { fail(["give --pushkey or --subscription"]) }
        let gateway: Gateway
        do {
            gateway = try await Bootstrap.makeGateway(configPath: options.path, readOnly: true)
        } catch {
            fail(error.lines)
        }
        let result = await gateway.sendTest(appId: appId, pushkey: pushkey, data: data)
        await gateway.close()
        print(result.report)
        if !result.succeeded { Foundation.exit(1) }
    }
}

struct Trace: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Ask the running Herald what became of an event's pushes: each device's outcome, when, the attempts and the provider's id.",
        discussion: """
            Asks the instance of this config on its metrics listener (GET /_herald/v1/deliveries, with admin.token_file's \
            bearer token when set). With notify.repeat_store on PostgreSQL the answer covers the whole fleet. Exits 1 \
            when no instance answers.
            """)
    @OptionGroup var options: ConfigOption

    @Option(
        name: .long,
        help:
            "The event id, as the front end named it: a Matrix event id, a Status message id (hex), a gorush notif_id, a relayed request's X-Request-Id, an ADAMANT transaction id."
    )
    var eventId: String?

    @Option(name: .long, help: "Only this device's deliveries (its full pushkey or token); alone, its deliveries of every event.")
    var pushkey: String?

    @Option(name: .long, help: "Only this app's deliveries.")
    var appId: String?

    func validate() throws {
        if pushkey != nil && appId != nil { throw ValidationError("give --pushkey or --app-id, not both") }
        if eventId == nil && pushkey == nil { throw ValidationError("give --event-id, --pushkey, or both") }
    }

    func run() async throws {
        let config: GatewayConfig
        do {
            config = try ConfigLoading.load(path: options.path).0
        } catch {
            fail(error.errors)
        }
        do {
            print(try await TraceCommand.run(config: config, eventId: eventId, pushkey: pushkey, appId: appId))
        } catch {
            FileHandle.standardError.write(Data("herald: \(error.description)\n".utf8))
            Foundation.exit(1)
        }
    }
}
