import Logging
import Synchronization

/// The process-wide log level, which a reload (SIGHUP) changes for every logger at once.
public enum LogLevelControl {
    private static let level = Mutex<Logger.Level?>(nil)

    public static var current: Logger.Level? { level.withLock { $0 } }
    public static func set(_ value: Logger.Level) { level.withLock { $0 = value } }
}
