import AdamantAdapter
import Crypto
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// `contrib/grafana/herald.json` queries only series Herald exports: a gateway with every kind of
/// app and front end is started, serves one notify, and its exposition must name every metric the
/// dashboard's expressions use.
@Suite struct DashboardTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The metric names in the dashboard's PromQL expressions.
    static func queriedSeries() throws -> Set<String> {
        let json = try JSONParser.parse(Array(try Data(contentsOf: root.appendingPathComponent("contrib/grafana/herald.json"))))
        var names: Set<String> = []
        for panel in json["panels"]?.arrayValue ?? [] {
            for target in panel["targets"]?.arrayValue ?? [] {
                let expr = target["expr"]?.stringValue ?? ""
                let pattern = try Regex(#"\b(sygnal|herald|process)_[a-z0-9_]+"#)
                for match in expr.matches(of: pattern) { names.insert(String(expr[match.range])) }
            }
        }
        return names
    }

    @Test func everySeriesTheDashboardQueriesIsExported() async throws {
        let queried = try Self.queriedSeries()
        #expect(queried.count > 20)
        let dir = temporaryDirectory()
        let pki = try TestPKI(directory: dir)
        let apns = try await FakeAPNs.start(
            pki: pki, topic: "com.example.app", auth: try APNsTestKey(directory: dir).auth)
        let fcm = try await FakeFCM.start(directory: dir)
        let hms = try await FakeHMS.start(directory: dir)
        let node = try await FakeAdamantNode.start()
        try "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
            .write(toFile: "\(dir)/passphrase", atomically: true, encoding: .utf8)
        let apps = """
              com.example.apns:
                type: apns
                keyfile: \(dir)/AuthKey.p8
                key_id: ABC123DEFG
                team_id: TEAM123456
                topic: com.example.app
                base_url: \(apns.baseURL)
                tls_ca_file: \(pki.caFile)
              com.example.cert:
                type: apns
                certfile: \(try pki.issueClientCertificate(topic: "com.example.app"))
                base_url: \(apns.baseURL)
                tls_ca_file: \(pki.caFile)
              com.example.fcm:
                type: gcm
                project_id: \(fcm.projectId)
                service_account_file: \(fcm.serviceAccountFile)
                base_url: \(fcm.baseURL)
              com.example.hms:
                type: hms
                app_id: '\(hms.appId)'
                app_secret_file: \(hms.appSecretFile)
                token_url: \(hms.tokenURL)
                base_url: \(hms.baseURL)
              com.example.unifiedpush:
                type: unifiedpush
            \(webpushApp("com.example.webpush", directory: dir))
            """
        // With PostgreSQL stores (a database of its own) where the suite has one:
        // `herald_component_failing` exists only then.
        let database = TestPostgres.url == nil ? nil : try await TestPostgres.createDatabase()
        let sections = """
            status:
              store: \(database ?? "\(dir)/status.sqlite")
              apns_app: com.example.apns
            relay:
              apns_app: com.example.apns
            adamant:
              nodes: ['\(node.baseURL)']
              passphrase_file: \(dir)/passphrase
              apns_app: com.example.apns
              store: \(database ?? "\(dir)/adamant.sqlite")
              poll_interval: 0.05
              signal_poll_interval: 0.05
            """
        let herald = try await RunningGateway.start(gatewayYAML(apps: apps, extra: sections))
        let pushkey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        _ = try await herald.notify(
            notifyBody(
                ["event_id": "$e", "type": "m.room.message", "content": ["body": "hi"]],
                devices: [["app_id": "com.example.apns", "pushkey": .string(pushkey)]]))
        let needsPostgres: Set = ["herald_component_failing"]
        let wanted = queried.filter { database != nil || !needsPostgres.contains($0) }
        // Some series appear once their worker ran (the ADAMANT pollers once the lease is taken):
        // waits for them rather than for a time, and fails on what is still missing after 60 s.
        var missing: [String] = []
        _ = try await AdamantEndToEndTests.eventually {
            let exposition = try await herald.metricsText()
            let exported = Set(
                exposition.split(separator: "\n").compactMap { line -> String? in
                    guard line.hasPrefix("# TYPE ") else { return nil }
                    return line.split(separator: " ").dropFirst(2).first.map(String.init)
                })
            missing = wanted.sorted().filter { name in
                let base = ["_bucket", "_sum", "_count"].reduce(name) { $0.hasSuffix($1) ? String($0.dropLast($1.count)) : $0 }
                return !exported.contains(name) && !exported.contains(base)
            }
            return missing.isEmpty
        }
        await herald.stop()
        await apns.stop()
        await fcm.stop()
        await hms.stop()
        await node.stop()
        #expect(missing.isEmpty, "the dashboard queries \(missing), which are not exported")
    }
}
