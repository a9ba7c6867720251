import Foundation
import Synchronization

/// Directories that tests write keys, certificates and stores into, under the system's temporary
/// directory. Each is removed when the process that made it exits: `scripts/test.sh` gives its run
/// a temporary directory of its own, but a `swift test` run without it used to leave about a
/// hundred behind.
package enum ScratchDirectory {
    private static let made = Mutex<[String]>([])
    /// Registers the removal at exit once, on the first directory made.
    private static let removalAtExit: Void = { atexit { ScratchDirectory.removeAll() } }()

    /// A new, empty directory whose name starts with `prefix`.
    package static func make(_ prefix: String) -> String {
        removalAtExit
        let path = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        made.withLock { $0.append(path) }
        return path
    }

    /// Removes every directory made so far (at exit).
    static func removeAll() {
        for path in made.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}
