import Foundation
import HeraldCore
import HeraldHTTPServer
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// The fuzzing seed corpus (docs/fuzzing.md), replayed on every test run: no seed crashes its
/// target, and each target has seeds that get past its first parser.
@Suite struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fuzz/corpus").path

    @Test(arguments: FuzzTarget.allCases)
    func theSeedCorpusRunsCleanAndReachesPastTheParser(_ target: FuzzTarget) throws {
        let directory = "\(Self.corpus)/\(target.rawValue)"
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        var accepted = 0
        for file in files where target.run([UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(file)")))) {
            accepted += 1
        }
        #expect(files.count >= 2)
        #expect(accepted >= 2, "\(target.rawValue): \(accepted) of \(files.count) seeds parse")
    }
}
