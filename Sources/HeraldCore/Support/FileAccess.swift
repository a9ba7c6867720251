import Foundation

/// Small file helpers used when loading keys and configs.
package enum FileAccess {
    package static func isReadable(_ path: String) -> Bool {
        FileManager.default.isReadableFile(atPath: path)
    }

    package static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path)
    }

    package static func readString(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8)
    }

    /// Writes a secret with mode 0600, creating parent directories, without replacing a file that
    /// appeared in the meantime.
    package static func writeSecret(_ contents: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: Data(contents.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}
