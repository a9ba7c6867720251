import Foundation

/// Herald's version, sent upstream as `User-Agent: Herald/<version>`, printed by
/// `herald --version` and exported as `herald_build_info{version,commit}`.
package enum HeraldVersion {
    package static let string = "0.3.0"
    package static let userAgent = "Herald/\(string)"

    /// The commit the binary was built from: `$HERALD_COMMIT`, else the `herald.commit` file that
    /// `scripts/serve.sh` and `scripts/package.sh` write beside the executable, else `unknown`.
    package static let commit: String = {
        if let value = ProcessInfo.processInfo.environment["HERALD_COMMIT"], !value.isEmpty { return value }
        let beside = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent().appendingPathComponent(
            "herald.commit")
        if let text = try? String(contentsOf: beside, encoding: .utf8) {
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !trimmed.isEmpty, trimmed.count <= 64, trimmed.allSatisfy({ $0.isHexDigit }) { return trimmed }
        }
        return "unknown"
    }()

    /// `0.3.0 (commit abc1234)`.
    package static var description: String { "\(string) (commit \(commit == "unknown" ? commit : String(commit.prefix(12))))" }
}
