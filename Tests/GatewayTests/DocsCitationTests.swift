import Foundation
import Testing

/// Every citation of a document's section (`docs/operations.md, "Health"`), in the sources, the
/// tests, the scripts and the documents themselves, names a heading that exists: a comment that
/// points at a section someone renamed or never wrote sends its reader nowhere.
@Suite struct DocsCitationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Files under `folder` (recursively) whose names end with one of `suffixes`.
    static func files(_ folder: String, _ suffixes: [String]) -> [String] {
        let base = root.appendingPathComponent(folder).path
        guard let walker = FileManager.default.enumerator(atPath: base) else { return [] }
        return walker.compactMap { $0 as? String }.filter { path in suffixes.contains { path.hasSuffix($0) } }.map { "\(folder)/\($0)" }
    }

    static func read(_ path: String) -> String? { try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8) }

    /// The text with comment markers and line breaks folded into single spaces, so that a citation
    /// wrapped over two comment lines reads as one.
    static func flattened(_ text: String) -> String {
        let folded = text.replacing(#/\n[ \t]*(?:///|//|#|>|\*)?[ \t]*/#, with: " ")
        return folded.replacing(#/[ \t]+/#, with: " ")
    }

    static func headings(_ document: String) -> Set<String>? {
        guard let text = read(document) else { return nil }
        return Set(
            text.split(separator: "\n").filter { $0.hasPrefix("#") }.map {
                String($0.drop { $0 == "#" }).trimmingCharacters(in: .whitespaces)
            })
    }

    @Test func everyCitedSectionExists() throws {
        let sources =
            Self.files("Sources", [".swift"]) + Self.files("Tests", [".swift"]) + Self.files("docs", [".md"])
            + Self.files("scripts", [".sh"]) + Self.files("bench", [".sh", ".py"]) + [
                "README.md", "SECURITY.md", "CONTRIBUTING.md", "Package.swift",
            ]
        let citation = #/((?:docs/[A-Za-z0-9_/.-]+|README|SECURITY|CONTRIBUTING)\.md), "([^"]+)"/#
        var checked = 0
        var broken: [String] = []
        for file in sources where file != "Tests/GatewayTests/DocsCitationTests.swift" {
            guard let text = Self.read(file) else { continue }
            for match in Self.flattened(text).matches(of: citation) {
                let (document, section) = (String(match.1), String(match.2))
                checked += 1
                guard let headings = Self.headings(document) else {
                    broken.append("\(file): \(document) does not exist")
                    continue
                }
                if !headings.contains(section) { broken.append("\(file): \(document) has no section \"\(section)\"") }
            }
        }
        #expect(checked > 50)
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    /// docs/architecture.md is the map: every source path it names (`Pushkins/Dispatch/Dispatcher.swift`,
    /// a module's folder) exists, relative to Sources/ or to the repository.
    @Test func everyPathTheArchitectureNamesExists() throws {
        let text = try #require(Self.read("docs/architecture.md"))
        let modules = Set((try? FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources").path)) ?? [])
        let path = #/[A-Za-z][A-Za-z0-9_-]*(?:/[A-Za-z0-9_.+-]+)+/#
        var checked = 0
        var missing: [String] = []
        for match in text.matches(of: path) {
            let token = String(match.0).trimmingCharacters(in: CharacterSet(charactersIn: "./"))
            let first = String(token.prefix { $0 != "/" })
            guard token.hasSuffix(".swift") || modules.contains(first) || ["docs", "scripts", "bench", "Tests"].contains(first) else {
                continue
            }
            checked += 1
            let candidates = [token, "Sources/\(token)"]
            if !candidates.contains(where: { FileManager.default.fileExists(atPath: Self.root.appendingPathComponent($0).path) }) {
                missing.append(token)
            }
        }
        #expect(checked > 20)
        #expect(missing.isEmpty, "docs/architecture.md names paths that do not exist: \(missing)")
    }
}
