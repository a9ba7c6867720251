package import OrderedCollections

/// Errors and warnings found while reading a config, each naming the full key path.
package final class ConfigDiagnostics {
    package private(set) var errors: [String] = []
    package private(set) var warnings: [String] = []
    /// What a choice in the config means, for `check-config` to explain (not a problem).
    package private(set) var notes: [String] = []
    /// Every key path any reader asked for, present or not: what docs/configuration.md must list.
    package private(set) var keysRead: Set<String> = []

    package func noteRead(_ path: String) { keysRead.insert(path) }

    package init() {}

    package func error(_ path: String, _ reason: String) { errors.append("\(path): \(reason)") }
    package func warning(_ path: String, _ reason: String) { warnings.append("\(path): \(reason)") }
    package func note(_ path: String, _ text: String) { notes.append("\(path): \(text)") }
}

/// Typed, path-aware access to one mapping of the config. Every key read is remembered, so that
/// `warnUnknownKeys()` can name the keys nobody asked for.
package final class ConfigSection {
    package let path: String
    package let diagnostics: ConfigDiagnostics
    private let values: OrderedDictionary<String, ConfigValue>
    private var consumed: Set<String> = []

    package init(path: String, values: OrderedDictionary<String, ConfigValue>, diagnostics: ConfigDiagnostics) {
        self.path = path
        self.values = values
        self.diagnostics = diagnostics
    }

    package var keys: [String] { Array(values.keys) }

    package func keyPath(_ key: String) -> String {
        let simple = key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
        let part = simple ? key : "'\(key)'"
        if path.isEmpty { return part }
        return simple ? "\(path).\(part)" : "\(path)[\(part)]"
    }

    package func has(_ key: String) -> Bool {
        diagnostics.noteRead(keyPath(key))
        return values[key] != nil && values[key] != .null
    }

    /// The raw value, marked as read.
    package func raw(_ key: String) -> ConfigValue? {
        consumed.insert(key)
        diagnostics.noteRead(keyPath(key))
        guard let value = values[key], value != .null else { return nil }
        return value
    }

    /// Marks keys as known without reading them (accepted for compatibility, not used).
    package func accept(_ keys: String...) { accept(keys) }
    package func accept(_ keys: [String]) {
        consumed.formUnion(keys)
        for key in keys { diagnostics.noteRead(keyPath(key)) }
    }

    private func typeError(_ key: String, _ expected: String, _ got: ConfigValue) {
        diagnostics.error(keyPath(key), "expected \(expected), got \(got.typeName)")
    }

    package func string(_ key: String, required: Bool = false) -> String? {
        guard let value = raw(key) else {
            if required { diagnostics.error(keyPath(key), "required key is missing") }
            return nil
        }
        switch value {
        case .string(let s):
            if required && s.isEmpty { diagnostics.error(keyPath(key), "must not be empty") }
            return s
        case .int(let i): return String(i)
        default:
            typeError(key, "a string", value)
            return nil
        }
    }

    package func int(_ key: String, default defaultValue: Int, range: ClosedRange<Int>? = nil) -> Int {
        guard let value = raw(key) else { return defaultValue }
        guard case .int(let i) = value else {
            typeError(key, "an integer", value)
            return defaultValue
        }
        if let range, !range.contains(i) {
            diagnostics.error(keyPath(key), "must be between \(range.lowerBound) and \(range.upperBound), got \(i)")
            return defaultValue
        }
        return i
    }

    /// A number of seconds (integer or decimal), returned as a `Duration`.
    package func seconds(_ key: String, default defaultValue: Double, range: ClosedRange<Double> = 0...86_400) -> Duration {
        var result = defaultValue
        if let value = raw(key) {
            switch value {
            case .int(let i): result = Double(i)
            case .double(let d): result = d
            default: typeError(key, "a number of seconds", value)
            }
            if !range.contains(result) {
                diagnostics.error(keyPath(key), "must be between \(range.lowerBound) and \(range.upperBound) seconds, got \(result)")
                result = defaultValue
            }
        }
        return .milliseconds(Int64((result * 1000).rounded()))
    }

    package func bool(_ key: String, default defaultValue: Bool) -> Bool {
        guard let value = raw(key) else { return defaultValue }
        guard case .bool(let b) = value else {
            typeError(key, "true or false", value)
            return defaultValue
        }
        return b
    }

    package func stringList(_ key: String) -> [String]? {
        guard let value = raw(key) else { return nil }
        guard case .list(let items) = value else {
            typeError(key, "a list of strings", value)
            return nil
        }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let s) = item else {
                diagnostics.error("\(keyPath(key))[\(index)]", "expected a string, got \(item.typeName)")
                continue
            }
            result.append(s)
        }
        return result
    }

    package func map(_ key: String) -> ConfigSection? {
        guard let value = raw(key) else { return nil }
        guard case .map(let m) = value else {
            typeError(key, "a mapping", value)
            return nil
        }
        return ConfigSection(path: keyPath(key), values: m, diagnostics: diagnostics)
    }

    /// A mapping passed on as JSON (`fcm_options`, `default_payload`).
    package func jsonObject(_ key: String) -> JSONObject? {
        guard let value = raw(key) else { return nil }
        guard case .map = value, case .object(let o) = value.json else {
            typeError(key, "a mapping", value)
            return nil
        }
        return o
    }

    /// A readable file path: missing or unreadable files are errors.
    package func readableFile(_ key: String, required: Bool) -> String? {
        guard let file = string(key, required: required), !file.isEmpty else { return nil }
        if !FileAccess.isReadable(file) {
            diagnostics.error(keyPath(key), "cannot read file '\(file)'")
        }
        return file
    }

    package func warnUnknownKeys() {
        for key in values.keys where !consumed.contains(key) {
            diagnostics.warning(keyPath(key), "unknown key, ignored")
        }
    }
}
