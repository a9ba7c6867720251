import Foundation
package import HeraldCore
package import Logging
import Synchronization

/// Writes log lines to standard error in `plain` or `json` format (config `log.format`).
package struct HeraldLogHandler: LogHandler {
    package enum Format: Sendable { case plain, json }

    package var logLevel: Logger.Level {
        get { LogLevelControl.current ?? level }
        set { level = newValue }
    }
    private var level: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    let label: String
    let format: Format
    /// The lines' time (docs/architecture.md, "Time").
    let clock: any HeraldClock

    package init(
        label: String, format: Format, level: Logger.Level, metadataProvider: Logger.MetadataProvider? = nil, clock: any HeraldClock
    ) {
        self.clock = clock
        self.label = label
        self.format = format
        self.level = level
        self.metadataProvider = metadataProvider
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var extra = metadataProvider?.get() ?? [:]
        if let metadata = event.metadata { extra.merge(metadata) { $1 } }
        let line = format(level: event.level, message: "\(event.message)", metadata: extra, timestamp: UTCTimestamp.string(for: clock.date))
        Self.output.withLock { _ in
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    /// One log line, newline included. No value can break the line: JSON escapes everything, and
    /// plain quotes (JSON-style) any message or value holding a control character, a quote or a
    /// space, so that a newline in a request value cannot forge a log line.
    func format(level: Logger.Level, message: String, metadata extra: Logger.Metadata?, timestamp: String) -> String {
        var merged = metadata
        if let extra { merged.merge(extra) { $1 } }
        switch format {
        case .plain:
            let requestId = merged.removeValue(forKey: "request_id").map { " [\(Self.plain("\($0)"))]" } ?? ""
            let fields = merged.sorted { $0.key < $1.key }.map { "\(Self.plain($0.key))=\(Self.plain("\($0.value)"))" }
                .joined(separator: " ")
            let text = Self.needsQuoting(message, allowSpaces: true) ? Self.quote(message) : message
            return "\(timestamp) \(level.rawValue.uppercased()) \(label)\(requestId) \(text)\(fields.isEmpty ? "" : " " + fields)\n"
        case .json:
            var out: [UInt8] = [UInt8(ascii: "{")]
            var first = true
            func field(_ key: String, _ value: String) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                JSONWriter.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                JSONWriter.writeString(value, into: &out)
            }
            field("ts", timestamp)
            field("level", level.rawValue)
            field("logger", label)
            field("msg", message)
            for (key, value) in merged.sorted(by: { $0.key < $1.key }) { field(key, "\(value)") }
            out.append(contentsOf: Array("}\n".utf8))
            return String(decoding: out, as: UTF8.self)
        }
    }

    private static let output = Mutex(())

    private static func needsQuoting(_ s: String, allowSpaces: Bool) -> Bool {
        s.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0 == "\"" || (!allowSpaces && $0 == " ") }
    }

    private static func plain(_ s: String) -> String { needsQuoting(s, allowSpaces: false) ? quote(s) : s }

    private static func quote(_ s: String) -> String {
        var out: [UInt8] = []
        JSONWriter.writeString(s, into: &out)
        return String(decoding: out, as: UTF8.self).replacingOccurrences(of: "\u{7F}", with: "\\u007f")
    }
}
