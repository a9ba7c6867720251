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

/// Start-up validation: every problem is one line naming the key path and the reason.
@Suite struct ConfigTests {
    func diagnose(_ yaml: String) async -> (errors: [String], warnings: [String]) {
        do {
            let (config, diagnostics) = try ConfigLoading.parse(yaml)
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let gateway = Gateway(config: config, diagnostics: diagnostics, logger: logger, clock: SystemClock())
            await gateway.close()
            return (diagnostics.errors, diagnostics.warnings)
        } catch {
            return (error.errors, [])
        }
    }

    func webpush(_ dir: String, _ extra: String = "") -> String {
        """
        apps:
          com.example.webpush:
            type: webpush
            vapid_private_key: \(dir)/vapid.pem
            create_vapid_key_if_missing: true
            vapid_contact_email: ops@example.org
        \(extra)
        """
    }

    @Test func aSygnalConfigLoadsUnchanged() async throws {
        let dir = temporaryDirectory()
        let yaml = """
            log:
              setup:
                version: 1
                formatters:
                  normal:
                    format: "%(asctime)s [%(process)d] %(levelname)-5s %(name)s %(message)s"
                handlers:
                  stderr:
                    class: "logging.StreamHandler"
                    formatter: "normal"
                    stream: "ext://sys.stderr"
                loggers:
                  sygnal.access:
                    propagate: false
                    handlers: ["stderr"]
                    level: "INFO"
                root:
                  handlers: ["stderr"]
                  level: "WARNING"
                disable_existing_loggers: false
              access:
                x_forwarded_for: false
            http:
              bind_addresses: ['127.0.0.1', '::1']
              port: 5000
            metrics:
              prometheus:
                enabled: false
                address: '127.0.0.1'
                port: 8000
              opentracing:
                enabled: false
                implementation: jaeger
                jaeger:
                  sampler:
                    type: 'const'
                    param: 1
              sentry:
                enabled: false
            proxy: 'http://user:secret@prox:8080'
            \(webpush(dir))
            """
        let (config, diagnostics) = try ConfigLoading.parse(yaml)
        #expect(diagnostics.errors == [])
        #expect(diagnostics.warnings == [])
        #expect(config.http.bindAddresses == ["127.0.0.1", "::1"])
        #expect(config.log.level == .warning)
        #expect(config.proxy == ProxySettings(host: "prox", port: 8080, username: "user", password: "secret"))
        #expect(await diagnose(yaml).errors == [])
    }

    @Test func unknownKeysAreWarnedAboutByTheirFullPath() async {
        let dir = temporaryDirectory()
        let result = await diagnose(
            """
            http:
              port: 5000
              bind_adresses: ['0.0.0.0']
            colour: blue
            \(webpush(dir, "    vapid_contact_mail: x"))
            """)
        #expect(result.errors == [])
        #expect(result.warnings.contains("http.bind_adresses: unknown key, ignored"))
        #expect(result.warnings.contains("colour: unknown section, ignored"))
        #expect(result.warnings.contains("apps['com.example.webpush'].vapid_contact_mail: unknown key, ignored"))
    }

    @Test(arguments: [
        ("http:\n  port: 'five thousand'\n", "http.port: expected an integer, got a string"),
        ("http:\n  port: 70000\n", "http.port: must be between 0 and 65535, got 70000"),
        ("http:\n  bind_addresses: '127.0.0.1'\n", "http.bind_addresses: expected a list of strings, got a string"),
        ("log:\n  format: xml\n", "log.format: must be plain or json, got 'xml'"),
        ("proxy: 'https://proxy:443'\n", "proxy: invalid proxy URL: only http:// proxies are supported"),
        ("metrics:\n  prometheus:\n    enabled: 'yes please'\n", "metrics.prometheus.enabled: expected true or false, got a string"),
        ("status:\n  sqlite_cache_kib: 8\n", "status.sqlite_cache_kib: must be between 16 and 1048576, got 8"),
        ("status:\n  store_timeout: 0\n", "status.store_timeout: must be between 0.05 and 300.0 seconds, got 0.0"),
        ("adamant:\n  lease_check: 120\n", "adamant.lease_check: must be between 0.05 and 60.0 seconds, got 120.0"),
        ("adamant:\n  store_timeout: 301\n", "adamant.store_timeout: must be between 0.05 and 300.0 seconds, got 301.0"),
        ("status:\n  store_max_connections: 0\n", "status.store_max_connections: must be between 1 and 1000, got 0"),
        ("adamant:\n  store_max_connections: 1\n", "adamant.store_max_connections: must be between 2 and 1000, got 1"),
        // Each of Status's platform rows checks its own key.
        ("status:\n  apns_app: com.example.webpush\n", "status.apns_app: app 'com.example.webpush' is of type webpush, not apns"),
        ("status:\n  fcm_app: com.example.webpush\n", "status.fcm_app: app 'com.example.webpush' is of type webpush, not gcm"),
        ("status:\n  hms_app: nowhere\n", "status.hms_app: no app 'nowhere' in apps"),
        ("notify:\n  heard_within: 61\n", "notify.heard_within: must be between 0.0 and 60.0 seconds, got 61.0"),
        ("http:\n  trusted_proxies: ['10.0.0.0/33']\n", "http.trusted_proxies: '10.0.0.0/33' is not an address or a CIDR network"),
        ("notify:\n  sources: {networks: {lb: {rate: 1}}}\n", "notify.sources.networks.lb: not an address or a CIDR network"),
        ("notify:\n  sources: {rate: -1}\n", "notify.sources.rate: must be between 0 and 1000000, got -1"),
    ])
    func wrongTypesStopStartupWithOneLineNamingTheKey(_ section: String, _ expected: String) async {
        let dir = temporaryDirectory()
        #expect(await diagnose(section + webpush(dir)).errors.contains(expected))
    }

    /// The keys of this release's UnifiedPush and FCM changes: accepted with good values, refused
    /// at their paths with bad ones.
    @Test func unifiedPushAndFCMTargetKeysAreCheckedAtTheirPaths() async throws {
        let dir = temporaryDirectory()
        let fcm = try await FakeFCM.start(directory: dir)
        await fcm.stop()
        func apps(_ unifiedpush: String, _ fcmTarget: String) -> String {
            """
            apps:
              up:
                type: unifiedpush
            \(unifiedpush.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
              gcm:
                type: gcm
                project_id: \(fcm.projectId)
                service_account_file: \(fcm.serviceAccountFile)
                fcm_target: \(fcmTarget)

            """
        }
        let good = await diagnose(
            apps("ttl: 600\nvapid_private_key: \(dir)/up.pem\nvapid_contact_email: push@example.org", "fid"))
        #expect(good.errors == [])
        #expect(FileManager.default.fileExists(atPath: "\(dir)/up.pem"))  // created on first start, as for webpush
        let bad = await diagnose(apps("ttl: -1\nvapid_private_key: \(dir)/up.pem", "maybe"))
        #expect(bad.errors.contains("apps.up.ttl: must be between 0 and 2419200, got -1"))
        #expect(bad.errors.contains { $0.hasPrefix("apps.up.vapid_contact_email: required with vapid_private_key") })
        #expect(bad.errors.contains("apps.gcm.fcm_target: must be auto, token or fid, got 'maybe'"))
        let budget = await diagnose(webpush(dir, "    per_device_per_minute: 10\n    inflight_request_limit: 8"))
        #expect(budget.errors == [] && budget.warnings == [], "\(budget)")
        let noKey = await diagnose(apps("vapid_contact_email: push@example.org", "auto"))
        #expect(noKey.warnings.contains("apps.up.vapid_contact_email: set without vapid_private_key: not used"))
    }

    @Test func zeroAppsIsAnError() async {
        #expect(await diagnose("http:\n  port: 5000\n").errors == ["apps: No app IDs are configured"])
        #expect(await diagnose("apps: {}\n").errors == ["apps: No app IDs are configured"])
    }

    @Test func missingRequiredKeysAndUnknownTypes() async {
        let result = await diagnose(
            """
            apps:
              a.b:
                type: webpush
              c.d:
                vapid_contact_email: x
              e.f:
                type: mystery
            """)
        #expect(result.errors.contains("apps['a.b'].vapid_private_key: required key is missing"))
        #expect(result.errors.contains("apps['a.b'].vapid_contact_email: required key is missing"))
        #expect(result.errors.contains("apps['c.d'].type: required key is missing"))
        #expect(result.errors.contains { $0.hasPrefix("apps['e.f'].type: unknown pushkin type 'mystery'") })
    }

    @Test func missingOrUnreadableKeyFilesAreErrors() async throws {
        let dir = temporaryDirectory()
        let missing = await diagnose(
            "apps:\n  w:\n    type: webpush\n    vapid_private_key: \(dir)/absent.pem\n    vapid_contact_email: x@example.org\n")
        #expect(missing.errors == ["apps.w.vapid_private_key: file '\(dir)/absent.pem' does not exist"])
        try "not a key".write(toFile: "\(dir)/bad.pem", atomically: true, encoding: .utf8)
        let bad = await diagnose(
            "apps:\n  w:\n    type: webpush\n    vapid_private_key: \(dir)/bad.pem\n    vapid_contact_email: x@example.org\n")
        #expect(bad.errors.count == 1)
        #expect(bad.errors.first?.hasPrefix("apps.w.vapid_private_key: '\(dir)/bad.pem' is not a P-256 private key") == true)
    }

    /// docs/compatibility/hms.md, "Configuration": each wrong `type: hms` key is named.
    @Test func huaweiAppsNameEachWrongKey() async throws {
        let dir = temporaryDirectory()
        try "\n".write(toFile: "\(dir)/empty-secret", atomically: true, encoding: .utf8)
        try "not json".write(toFile: "\(dir)/account.json", atomically: true, encoding: .utf8)
        let result = await diagnose(
            """
            apps:
              a:
                type: hms
                api: ios
              b:
                type: hms
                app_id: '104'
                app_secret_file: \(dir)/empty-secret
              c:
                type: hms
                api: harmony
                service_account_file: \(dir)/account.json
              d:
                type: hms
                app_secret_file: \(dir)/empty-secret
                push_type: voip
            """)
        #expect(result.errors.contains("apps.a.api: must be android or harmony, got 'ios'"))
        #expect(result.errors.contains("apps.b.app_secret_file: '\(dir)/empty-secret' holds no secret"))
        #expect(result.errors.contains("apps.c.service_account_file: '\(dir)/account.json' is not JSON"))
        #expect(result.errors.contains("apps.d.app_id: required key is missing"))
        #expect(result.errors.contains("apps.d.push_type: must be alert, extension or background, got 'voip'"))
    }

    /// `check-config` explains each HarmonyOS push type chosen (docs/compatibility/hms.md, "Push
    /// types"): what the user sees, and what the choice needs or costs.
    @Test(arguments: [
        ("", "notifications the system shows (push-type 0)"),
        ("event_id_only_push_type: extension", "must hold Huawei's notification-extension right"),
        ("event_id_only_push_type: background", "only while it is in the foreground"),
    ])
    func checkConfigExplainsTheHarmonyOSPushTypes(_ key: String, _ explanation: String) async throws {
        let hms = try await FakeHMS.start(directory: temporaryDirectory())
        await hms.stop()
        let (config, diagnostics) = try ConfigLoading.parse(
            """
            apps:
              h:
                type: hms
                api: harmony
                service_account_file: \(hms.serviceAccountFile)
                \(key)
            """)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let gateway = Gateway(config: config, diagnostics: diagnostics, logger: logger, clock: SystemClock())
        await gateway.close()
        #expect(diagnostics.errors.isEmpty)
        let note = try #require(gateway.configNotes.first { $0.hasPrefix("apps.h.event_id_only_push_type: event_id_only pushes") })
        #expect(note.contains(explanation))
        #expect(gateway.configNotes.contains { $0.hasPrefix("apps.h.push_type: full pushes are notifications the system shows") })
    }

    @Test func invalidYAMLIsOneLine() async {
        let errors = await diagnose("http:\n  port: [\n").errors
        #expect(errors.count == 1)
        #expect(errors.first?.contains("invalid YAML") == true)
        #expect(errors.first?.contains("\n") == false)
    }

    @Test func aCreatedVAPIDKeyIsReusedOnTheNextStart() async throws {
        let dir = temporaryDirectory()
        let yaml = webpush(dir)
        let first = try #require(try await makePushkin(yaml))
        let second = try #require(try await makePushkin(yaml))
        #expect(first.applicationServerKey == second.applicationServerKey)
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(dir)/vapid.pem")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func bootstrapReportsEveryErrorOfAConfigFile() async throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/herald.yaml"
        try "http:\n  port: x\napps: {}\n".write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try await Bootstrap.makeGateway(configPath: path)
            Issue.record("an invalid config started")
        } catch {
            #expect(error.lines == ["http.port: expected an integer, got a string", "apps: No app IDs are configured"])
        }
        do {
            _ = try await Bootstrap.makeGateway(configPath: "\(dir)/none.yaml")
            Issue.record("a missing config started")
        } catch {
            #expect(error.lines.count == 1)
            #expect(error.lines[0].hasPrefix("\(dir)/none.yaml: cannot read config file"))
        }
    }

    @Test func validationAloneCreatesNoFiles() async throws {
        let dir = temporaryDirectory()
        let path = "\(dir)/herald.yaml"
        try webpush(dir).write(toFile: path, atomically: true, encoding: .utf8)
        let gateway = try await Bootstrap.makeGateway(configPath: path, readOnly: true)
        await gateway.close()
        #expect(gateway.pushkins.count == 1)
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/vapid.pem"))
    }

    @Test func theShippedConfigIsValid() async throws {
        // The repository's config.yaml, as `herald serve` starts with it (its key path made absolute).
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("config.yaml"), encoding: .utf8)
        let dir = temporaryDirectory()
        let result = await diagnose(text.replacingOccurrences(of: "./data/", with: dir + "/"))
        #expect(result.errors == [])
        #expect(result.warnings == [])
    }

    func makePushkin(_ yaml: String) async throws -> WebPushPushkin? {
        let (config, diagnostics) = try ConfigLoading.parse(yaml)
        let gateway = Gateway(config: config, diagnostics: diagnostics, logger: Logger(label: "t"), clock: SystemClock())
        await gateway.close()
        return gateway.pushkins.first as? WebPushPushkin
    }
}
