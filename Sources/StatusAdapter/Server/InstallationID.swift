/// `uuid.Parse` of google/uuid, which status-go uses for installation ids and access tokens:
/// the canonical 36-character form, `urn:uuid:` prefixed, `{…}` braced, and 32 hex digits.
enum InstallationID {
    static func isValid(_ text: String) -> Bool {
        var s = Substring(text)
        switch s.utf8.count {
        case 45 where s.lowercased().hasPrefix("urn:uuid:"): s = s.dropFirst(9)
        case 38 where s.first == "{" && s.last == "}": s = s.dropFirst().dropLast()
        case 32: return s.allSatisfy(\.isHexDigit)
        case 36: break
        default: return false
        }
        let chars = Array(s)
        guard chars.count == 36 else { return false }
        for (i, c) in chars.enumerated() {
            if [8, 13, 18, 23].contains(i) {
                guard c == "-" else { return false }
            } else if !c.isHexDigit {
                return false
            }
        }
        return true
    }
}
