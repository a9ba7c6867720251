import Foundation
import Gateway
import HeraldCore
import Pushkins
import Testing

/// A new provider is its folder, one registry line and its fake (CONTRIBUTING.md, "Adding a
/// pushkin (a new push provider)"): each registered provider has a folder of its own, a fake that speaks its protocol,
/// its page in docs/compatibility and its status-code series on the dashboard; each fuzz target
/// has its corpus.
@Suite struct ProviderChecklistTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path) }

    /// The provider folders of Sources/Pushkins (the dispatcher and the protocol are not providers).
    static func providerFolders() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources/Pushkins").path)
            .filter { !["Dispatch", "Pushkin"].contains($0) && !$0.hasPrefix(".") }.sorted()
    }

    @Test func everyRegisteredProviderHasItsFolderFakePageAndDashboardSeries() throws {
        let types = PushkinRegistry.standard.types
        let folders = try Self.providerFolders()
        // One folder per registered type: a provider registered without a folder, or a folder
        // never registered, shows here.
        #expect(folders.count == types.count, "folders \(folders), types \(types.map(\.rawValue))")
        for folder in folders {
            #expect(Self.exists("Sources/HeraldTestSupport/\(folder)"), "\(folder) has no fake in Sources/HeraldTestSupport/\(folder)")
            #expect(
                Self.exists("docs/compatibility/\(folder.lowercased()).md"),
                "\(folder) has no page docs/compatibility/\(folder.lowercased()).md")
        }
        let dashboard = try String(contentsOf: Self.root.appendingPathComponent("contrib/grafana/herald.json"), encoding: .utf8)
        for type in types {
            #expect(dashboard.contains("sygnal_\(type.rawValue)_status_codes_total"), "the dashboard shows no status codes of \(type)")
        }
    }

    @Test func everyFuzzTargetHasItsCorpus() {
        for target in FuzzTarget.allCases {
            #expect(Self.exists("fuzz/corpus/\(target.rawValue)"), "fuzz target \(target) has no corpus in fuzz/corpus/\(target.rawValue)")
        }
    }
}
