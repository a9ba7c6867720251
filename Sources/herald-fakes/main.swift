import ArgumentParser
import Foundation
import HeraldTestSupport
import Pushkins

/// Runs Herald's fake upstreams on loopback for the benchmark and the demo, and prints the
/// subscriptions (as JSON) that notify requests can use.
@main
struct HeraldFakes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "herald-fakes", abstract: "Fake push services for benchmarks and demos.")

    @Option(help: "Port of the fake Web Push service (0 picks one).")
    var webpushPort: Int = 0

    @Option(help: "How many Web Push subscriptions to create.")
    var subscriptions: Int = 1

    @Option(help: "Write the subscriptions here as JSON (default: standard output).")
    var output: String?

    func run() async throws {
        let webpush = try await FakeWebPushService.start(port: webpushPort, recordRequests: false)
        var list: [JSONValue] = []
        for n in 0..<subscriptions {
            let s = webpush.subscribe("sub\(n)")
            list.append(["endpoint": .string(s.endpoint), "p256dh": .string(s.p256dh), "auth": .string(s.auth)])
        }
        let document = JSONWriter.string(["webpush": ["port": .int(Int64(webpush.server.port)), "subscriptions": .array(list)]])
        if let output {
            try document.write(toFile: output, atomically: true, encoding: .utf8)
        } else {
            print(document)
        }
        FileHandle.standardError.write(Data("herald-fakes: Web Push on \(webpush.baseURL)\n".utf8))
        while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
    }
}
