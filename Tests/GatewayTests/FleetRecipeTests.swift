import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import Testing

@testable import Gateway

/// The fleet recipe an operator copies (scripts/fleet.sh, docs/deployment.md "A fleet") delivers
/// once: its instances share the delivery record on the fleet's PostgreSQL, `check-config` says
/// when a fleet's config leaves that out, and the chaos test runs the recipe's own file.
@Suite struct FleetRecipeTests {
    /// The recipe's config for instance 1, for fakes started here, and the fakes' directory.
    static func recipe(postgres: String) async throws -> (yaml: String, directory: String, stop: @Sendable () async -> Void) {
        let dir = temporaryDirectory()
        let (pki, apns) = try await StatusDurabilityTests.fakeAPNs(directory: dir)
        let fcm = try await FakeFCM.start(directory: dir)
        let node = try await FakeAdamantNode.start()
        try AdamantEndToEndTests.servicePassphrase.write(toFile: "\(dir)/passphrase", atomically: true, encoding: .utf8)
        let yaml = try await FleetChaosTests.config(
            index: 1, port: StatusDurabilityTests.freePort(), metricsPort: StatusDurabilityTests.freePort(), directory: dir, apns: apns,
            fcm: fcm, node: node, postgres: postgres, pki: pki)
        return (
            yaml, dir,
            {
                await apns.stop(); await fcm.stop(); await node.stop()
            }
        )
    }

    static func gateway(_ yaml: String) throws -> (Gateway, ConfigDiagnostics) {
        let (config, diagnostics) = try ConfigLoading.parse(yaml)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return (Gateway(config: config, diagnostics: diagnostics, logger: logger, readOnly: true, clock: SystemClock()), diagnostics)
    }

    /// The new keys' refusals, each naming its key.
    @Test func anEmptyAdminTokenAndAnInsecureStartURLAreRefused() async throws {
        let dir = temporaryDirectory()
        try "\n".write(toFile: "\(dir)/empty", atomically: true, encoding: .utf8)
        let app = webpushApp(
            "w", directory: dir,
            extra: "declarative: true\ndeclarative_navigate: https://app.example.org/#/room/{room_id}\n"
                + "declarative_start_url: http://app.example.org/")
        let (gateway, diagnostics) = try Self.gateway(gatewayYAML(apps: app, extra: "admin:\n  token_file: \(dir)/empty"))
        await gateway.close()
        #expect(diagnostics.errors.contains("admin.token_file: '\(dir)/empty' holds no token"), "\(diagnostics.errors)")
        #expect(
            diagnostics.errors.contains("apps.w.declarative_start_url: must be an https URL, got 'http://app.example.org/'"),
            "\(diagnostics.errors)")
    }

    @Test func theRecipeSharesTheDeliveryRecordOnTheFleetsDatabase() async throws {
        let url = "postgres://postgres@127.0.0.1:1/fleet"
        let recipe = try await Self.recipe(postgres: url)
        let (gateway, diagnostics) = try Self.gateway(recipe.yaml)
        await gateway.close()
        await recipe.stop()
        #expect(recipe.yaml.hasPrefix("# Instance 1 of the fleet"))  // the recipe's own file
        #expect(diagnostics.errors.isEmpty, "\(diagnostics.errors)")
        #expect(gateway.config.notify.record.repeatStore == url)
        #expect(!gateway.configNotes.contains { $0.hasPrefix("notify.repeat_store: memory") })
        // What the database user must be allowed.
        #expect(
            gateway.configNotes.contains(
                "notify.repeat_store: the stores on PostgreSQL (notify.repeat_store, status.store, adamant.store) make their tables "
                    + "on first use: the database user needs CREATE on its schema (PostgreSQL 15 gives it only to the schema's owner), "
                    + "and PostgreSQL 12 or later (docs/operations.md, \"The database's rights\")"), "\(gateway.configNotes)")
        // What the fleet's PostgreSQL must allow for, per instance.
        #expect(
            gateway.configNotes.contains(
                "notify.repeat_store_max_connections: each instance keeps 2 connections to the record's PostgreSQL open and opens up to 8: "
                    + "PostgreSQL's max_connections must allow that many for every instance, besides the Status and ADAMANT stores' own "
                    + "(docs/configuration.md)"), "\(gateway.configNotes)")
    }

    /// `check-config` on the recipe's file without its `notify:` section: a note says that the
    /// instances sharing the database would each send a repeated notify.
    @Test(.enabled(if: OperatorBinaryTests.binary != nil, "needs the herald executable"))
    func checkConfigNotesAFleetWithoutASharedRecord() async throws {
        let recipe = try await Self.recipe(postgres: "postgres://postgres@127.0.0.1:1/fleet")
        let lines = recipe.yaml.split(separator: "\n", omittingEmptySubsequences: false)
        var kept: [Substring] = []
        var inNotify = false
        for line in lines {
            if line.hasPrefix("notify:") {
                inNotify = true
                continue
            }
            if inNotify, line.hasPrefix(" ") || line.hasPrefix("#") { continue }
            inNotify = false
            kept.append(line)
        }
        let path = "\(recipe.directory)/without-record.yaml"
        try kept.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        try recipe.yaml.write(toFile: "\(recipe.directory)/recipe.yaml", atomically: true, encoding: .utf8)
        let without = try await OperatorBinaryTests.run(["check-config", "--config", path])
        let with = try await OperatorBinaryTests.run(["check-config", "--config", "\(recipe.directory)/recipe.yaml"])
        await recipe.stop()
        #expect(without.status == 0, "\(without.output)")
        #expect(
            without.output.contains(
                "note: notify.repeat_store: memory, while status.store is a PostgreSQL database: instances sharing this database each send a repeated notify"
            ), "\(without.output)")
        #expect(with.status == 0 && !with.output.contains("note: notify.repeat_store: memory"), "\(with.output)")
    }
}
