import Foundation
import Testing

/// Each metric name is spelled once, in `MetricName` (HeraldCore/Support/MetricName.swift) or its
/// module's extension of it (`…MetricNames.swift`): a name written twice is a name that can drift.
@Suite struct MetricNameTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    static func misplaced(in files: [String: String]) -> [String] {
        files.filter { path, text in
            !path.hasPrefix("HeraldTestSupport/") && !path.hasPrefix("herald-fakes/") && !path.contains("MetricName")
                && text.contains(#/"(herald|sygnal)_[a-z]/#)
        }.keys.sorted()
    }

    @Test func metricNamesAreSpelledOnlyInTheirNamespace() throws {
        let walker = try #require(FileManager.default.enumerator(atPath: Self.sources.path))
        var files: [String: String] = [:]
        for case let path as String in walker where path.hasSuffix(".swift") {
            files[path] = try String(contentsOf: Self.sources.appendingPathComponent(path), encoding: .utf8)
        }
        #expect(Self.misplaced(in: files).isEmpty, "metric names spelled outside MetricName: \(Self.misplaced(in: files))")
        // And the check sees one written anywhere else.
        files["Pushkins/APNs/APNsPushkin.swift", default: ""] += #"let c = Counter(label: "herald_new_total")"#
        #expect(Self.misplaced(in: files) == ["Pushkins/APNs/APNsPushkin.swift"])
    }
}
