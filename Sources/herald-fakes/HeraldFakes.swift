import AdamantAdapter
import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldTestSupport

/// Runs Herald's fake upstreams on loopback for the benchmark and demos: a Web Push service, an
/// APNs (HTTP/2 over TLS, token auth) and an FCM (OAuth + v1 + legacy). It writes everything a
/// Herald config needs (ports, CA, keys, service account, subscriptions) to `<directory>/fakes.json`.
@main
struct HeraldFakes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "herald-fakes", abstract: "Fake push services for benchmarks and demos.")

    @Option(help: "Where to write keys, certificates and fakes.json.")
    var directory: String

    @Option(help: "How many Web Push subscriptions to create.")
    var subscriptions: Int = 1

    @Flag(help: "Record requests (for demos); off keeps memory flat under load.")
    var record = false

    @Option(help: "Instead of serving: prepare a Status push-request load against the Herald at this URL.")
    var statusLoad: String?

    @Option(help: "With --status-load: how many distinct push requests to write to <directory>/status-requests.bin.")
    var count = 50_000

    @Option(
        help: "Instead of serving: drive the running fakes of <directory> (apns, fcm or webpush) and print the requests/s they answered."
    )
    var drive: String?

    @Option(help: "With --drive: for how many seconds.")
    var seconds: Double = 5

    @Option(help: "With --drive: requests kept in flight.")
    var concurrency = 64

    @Option(help: "Instead of serving: write --count distinct Status registrations for the Herald at this URL.")
    var statusRegistrations: String?

    @Option(help: "Also run a fake ADAMANT node with this many users registered (signals to the service account).")
    var adamantDevices = 0

    @Option(help: "Seconds the fake APNs waits before answering each request (a slow upstream, for demos of \"once\").")
    var apnsDelay: Double = 0

    func run() async throws {
        if let target = drive {
            let rate = try await FakeCeiling.drive(target: target, directory: directory, seconds: seconds, concurrency: concurrency)
            print(String(format: "%.0f", rate))
            return
        }
        if let url = statusRegistrations {
            try await StatusLoad.registrations(url: url, count: count, output: directory + "/status-registrations.bin")
            return
        }
        if let url = statusLoad {
            try await StatusLoad.prepare(url: url, clients: 20, count: count, output: directory + "/status-requests.bin")
            return
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let webpush = try await FakeWebPushService.start(recordRequests: record)
        var list: [JSONValue] = []
        for n in 0..<subscriptions {
            let s = webpush.subscribe("sub\(n)")
            list.append(["endpoint": .string(s.endpoint), "p256dh": .string(s.p256dh), "auth": .string(s.auth)])
        }

        let pki = try TestPKI(directory: directory)
        let apnsKey = P256.Signing.PrivateKey()
        let keyFile = directory + "/AuthKey_FAKEKEY123.p8"
        try apnsKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let apns = try await FakeAPNs.start(
            pki: pki, topic: "com.example.app", auth: .token(keyId: "FAKEKEY123", teamId: "FAKETEAM01", publicKey: apnsKey.publicKey),
            recordRequests: record)

        if apnsDelay > 0 { apns.scriptDefault(.delay(.milliseconds(Int64(apnsDelay * 1000)), then: .accept)) }
        let fcm = try await FakeFCM.start(directory: directory, recordRequests: record)
        let hms = try await FakeHMS.start(directory: directory, recordRequests: record)

        var adamant: JSONValue = .null
        if adamantDevices > 0 {
            let node = try await FakeAdamantNode.start()
            node.setRecordRequests(record)
            let passphrase = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
            let passphraseFile = directory + "/adamant-passphrase"
            try passphrase.write(toFile: passphraseFile, atomically: true, encoding: .utf8)
            let service = try AdamantKeys(passphrase: passphrase)
            for _ in 0..<adamantDevices {
                let user = try AdamantKeys(seed: (0..<32).map { _ in UInt8.random(in: 0...255) })
                try node.addSignal(
                    from: user, to: service, token: Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255) }), newBlock: false)
            }
            node.extraState.withLock { $0 = { ["apns_answered": .int(Int64(apns.answered))] } }
            adamant = ["node": .string(node.baseURL), "passphrase_file": .string(passphraseFile), "devices": .int(Int64(adamantDevices))]
        }

        let document: JSONValue = [
            "adamant": adamant,
            "webpush": ["base_url": .string(webpush.baseURL), "subscriptions": .array(list)],
            "apns": [
                "base_url": .string(apns.baseURL), "ca_file": .string(pki.caFile), "keyfile": .string(keyFile), "key_id": "FAKEKEY123",
                "team_id": "FAKETEAM01", "topic": "com.example.app",
            ],
            "fcm": [
                "base_url": .string(fcm.baseURL), "project_id": .string(fcm.projectId),
                "service_account_file": .string(fcm.serviceAccountFile),
                "legacy_api_key": .string(fcm.legacyAPIKey),
            ],
            "hms": [
                "base_url": .string(hms.baseURL), "app_id": .string(hms.appId), "app_secret_file": .string(hms.appSecretFile),
                "token_url": .string(hms.tokenURL), "service_account_file": .string(hms.serviceAccountFile),
            ],
        ]
        let output = directory + "/fakes.json"
        try JSONWriter.string(document).write(toFile: output + ".tmp", atomically: true, encoding: .utf8)
        try FileManager.default.moveItem(atPath: output + ".tmp", toPath: output)
        FileHandle.standardError.write(
            Data(
                "herald-fakes: Web Push \(webpush.baseURL), APNs \(apns.baseURL), FCM \(fcm.baseURL), HMS \(hms.baseURL); \(output)\n".utf8)
        )
        while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
    }
}
