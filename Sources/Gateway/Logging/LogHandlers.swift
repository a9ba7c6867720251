import Foundation
import Logging
import Synchronization

/// Writes log lines to standard error in `plain` or `json` format (config `log.format`).
public struct HeraldLogHandler: LogHandler {
    public enum Format: Sendable { case plain, json }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    let label: String
    let format: Format

    public init(label: String, format: Format, level: Logger.Level) {
        self.label = label
        self.format = format
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let line = format(level: event.level, message: "\(event.message)", metadata: event.metadata, timestamp: Self.timestamp())
        Self.output.withLock { _ in
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    /// One log line, newline included.
    func format(level: Logger.Level, message: String, metadata extra: Logger.Metadata?, timestamp: String) -> String {
        var merged = metadata
        if let extra { merged.merge(extra) { $1 } }
        let line: String
        switch format {
        case .plain:
            let requestId = merged.removeValue(forKey: "request_id").map { " [\($0)]" } ?? ""
            let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            line =
                "\(timestamp) \(level.rawValue.uppercased()) \(label)\(requestId) \(message)\(fields.isEmpty ? "" : " " + fields)\n"
        case .json:
            var object: [(String, String)] = [
                ("ts", timestamp), ("level", level.rawValue), ("logger", label), ("msg", message),
            ]
            for (key, value) in merged.sorted(by: { $0.key < $1.key }) { object.append((key, "\(value)")) }
            line = "{" + object.map { "\(Self.quote($0.0)):\(Self.quote($0.1))" }.joined(separator: ",") + "}\n"
        }
        return line
    }

    private static let output = Mutex(())

    private static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon))
    }

    private static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
