package import Logging
import Synchronization

/// The lines a logger wrote, for a test to compare: each event as `line` makes it (nil leaves it
/// out), at any level from `level` up.
package final class LogCapture: Sendable {
    private let captured = Mutex<[String]>([])
    private let line: @Sendable (LogEvent) -> String?

    /// `line`: the event as the test compares it; by default "LEVEL message".
    package init(line: @escaping @Sendable (LogEvent) -> String? = { "\($0.level) \($0.message)" }) { self.line = line }

    package var lines: [String] { captured.withLock { $0 } }

    /// A logger whose lines go here, at `level` and above.
    package func logger(level: Logger.Level = .trace) -> Logger {
        Logger(label: "test") { _ in Handler(capture: self, logLevel: level) }
    }

    struct Handler: LogHandler {
        let capture: LogCapture
        var logLevel: Logger.Level
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            guard let text = capture.line(event) else { return }
            capture.captured.withLock { $0.append(text) }
        }
    }
}
