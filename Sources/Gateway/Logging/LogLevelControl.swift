package import Logging
import Synchronization

/// The process-wide log level, which a reload (SIGHUP) changes for every logger at once.
package enum LogLevelControl {
    private static let level = Mutex<Logger.Level?>(nil)

    package static var current: Logger.Level? { level.withLock { $0 } }
    package static func set(_ value: Logger.Level) { level.withLock { $0 = value } }
}
