import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Logging
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// docs/configuration.md lists exactly the keys the config reader asks for: a config with every
/// section and every kind of app is read, the key paths read are collected, and they must be the
/// documented ones (no key undocumented, none documented that nothing reads).
@Suite struct ConfigReferenceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `section.key` for every documented key: headings name a section in a code span (`http`,
    /// `type: apns`, `apps.<app>`, `(top level)`), table rows name keys in a code span.
    static func documentedKeys() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var section = ""
        var keys: Set<String> = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#"), let open = line.firstIndex(of: "`"), let close = line[line.index(after: open)...].firstIndex(of: "`") {
                let name = String(line[line.index(after: open)..<close])
                section = name.hasPrefix("type: ") ? String(name.dropFirst(6)) : name
            } else if line.hasPrefix("#") {
                section = ""
            } else if line.hasPrefix("| `"), !section.isEmpty {
                let cell = line.dropFirst(3)
                guard let close = cell.firstIndex(of: "`") else { continue }
                let key = String(cell[..<close])
                keys.insert(section == "(top level)" ? key : "\(section).\(key)")
            }
        }
        return keys
    }

    /// The key paths the reader asks for, app keys named by the app's type.
    static func readKeys() async throws -> Set<String> {
        let dir = temporaryDirectory()
        for file in ["key.p8", "cert.pem", "sa.json", "ca.pem", "passphrase", "secret"] {
            try "x".write(toFile: "\(dir)/\(file)", atomically: true, encoding: .utf8)
        }
        let yaml = """
            http: {port: 0}
            log: {level: info, access: {enabled: true}}
            metrics: {prometheus: {enabled: false}}
            tracing: {enabled: false}
            notify: {repeat_window: 60, sources: {rate: 1, networks: {'10.0.0.0/8': {rate: 2}}}}
            admin: {token_file: \(dir)/secret}
            proxy: 'http://p:1'
            no_proxy: [x]
            status: {gorush: {}, apns_app: a, hms_app: h}
            relay: {apns_app: a}
            adamant: {apns_app: a, nodes: ['http://n'], passphrase_file: \(dir)/passphrase, payloads: {chat: {}, transfer: {}}, startup: initial, start_height: 0}
            apps:
              w: {type: webpush, vapid_private_key: \(dir)/none.pem, vapid_contact_email: x}
              a: {type: apns, keyfile: \(dir)/key.p8, key_id: k, team_id: t, topic: t}
              c: {type: apns, certfile: \(dir)/cert.pem}
              g: {type: gcm, project_id: p, service_account_file: \(dir)/sa.json}
              l: {type: gcm, api_version: legacy, api_key: k}
              u: {type: unifiedpush}
              h: {type: hms, app_id: '1', app_secret_file: \(dir)/secret}
              o: {type: hms, api: harmony, service_account_file: \(dir)/sa.json, project_id: p}
            """
        let (config, diagnostics) = try ConfigLoading.parse(yaml)
        var logger = Logger(label: "reference")
        logger.logLevel = .critical
        let gateway = Gateway(config: config, diagnostics: diagnostics, logger: logger, readOnly: true, clock: SystemClock())
        await gateway.close()
        let types = ["w": "webpush", "a": "apns", "c": "apns", "g": "gcm", "l": "gcm", "u": "unifiedpush", "h": "hms", "o": "hms"]
        var paths: Set<String> = []
        for path in diagnostics.keysRead {
            let parts = path.split(separator: ".", maxSplits: 2).map(String.init)
            if parts.first == "apps", parts.count == 3, let type = types[parts[1]] {
                paths.insert(
                    ["type", "inflight_request_limit", "per_device_per_minute"].contains(parts[2])
                        ? "apps.<app>.\(parts[2])" : "\(type).\(parts[2])")
            } else {
                // A key that names a network (`notify.sources.networks`) is documented as `<network>`.
                paths.insert(path.replacing(#/networks\['[^']*'\]/#, with: "networks.<network>"))
            }
        }
        // Sections are not keys: drop every path that others extend.
        return paths.filter { path in
            !paths.contains { $0.hasPrefix(path + ".") } && path != "apps" && !path.hasPrefix("apps.") || path.hasPrefix("apps.<app>")
        }
    }

    @Test func theReferenceListsExactlyTheKeysTheReaderReads() async throws {
        let documented = try Self.documentedKeys()
        let read = try await Self.readKeys()
        #expect(read.count > 80)
        #expect(read.subtracting(documented).sorted() == [], "read but not documented")
        #expect(documented.subtracting(read).sorted() == [], "documented but never read")
    }
}
