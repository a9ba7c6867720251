/// Secrets in logs: only a short prefix of a pushkey or device token is ever written.
package enum Redaction {
    package static func pushkey(_ key: String) -> String {
        let prefixLength = 6
        guard key.count > prefixLength else { return String(repeating: "*", count: max(key.count, 1)) }
        return String(key.prefix(prefixLength)) + "…"
    }
}
