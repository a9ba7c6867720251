/// The type YAML gives a scalar written without a tag, by the rules Herald's config has always been
/// read with: YAML 1.1's forms, as Yams' default resolver has them (`yes`/`on`/`true` and their
/// opposites are booleans; `0x1F`, `0o17`, `017`, `0b101`, `1_000` and `1:30` integers; `1.5`, `1e3`,
/// `.5`, `.inf` and `.nan` floats; `~`, `null` and the empty string null).
///
/// Written out rather than left to Yams: its resolver matches each rule with `NSRegularExpression`,
/// and loading ICU's regular-expression engine for the few dozen scalars of a config file kept about
/// 4 MiB of ICU resident for the life of the process.
enum YAMLImplicitType: Equatable {
    case bool, int, float, null, string

    /// The tag YAML writes for the type.
    var tag: String {
        switch self {
        case .bool: "tag:yaml.org,2002:bool"
        case .int: "tag:yaml.org,2002:int"
        case .float: "tag:yaml.org,2002:float"
        case .null: "tag:yaml.org,2002:null"
        case .string: "tag:yaml.org,2002:str"
        }
    }

    static func of(_ text: String) -> YAMLImplicitType {
        // The rules are anchored with `$`, which also matches before one final line terminator.
        var scalars = Array(text.unicodeScalars)
        if scalars.suffix(2) == ["\r", "\n"] {
            scalars.removeLast(2)
        } else if let last = scalars.last, lineTerminators.contains(last) {
            scalars.removeLast()
        }
        let bytes = Array(String(String.UnicodeScalarView(scalars)).utf8)
        if booleans.contains(bytes) { return .bool }
        if isInt(bytes[...]) { return .int }
        if isFloat(bytes[...]) { return .float }
        if nulls.contains(bytes) { return .null }
        return .string
    }

    private static let booleans: Set<[UInt8]> = Set(
        ["yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"]
            .map { Array($0.utf8) })
    private static let lineTerminators: Set<Unicode.Scalar> = ["\n", "\u{0B}", "\u{0C}", "\r", "\u{85}", "\u{2028}", "\u{2029}"]
    private static let nulls: Set<[UInt8]> = Set(["~", "null", "Null", "NULL", ""].map { Array($0.utf8) })

    /// `[-+]?` then: `0b[0-1_]+`, `0o?[0-7_]+`, `0`, `[1-9][0-9_]*`, `0x[0-9a-fA-F_]+`, or a
    /// sexagesimal `[1-9][0-9_]*(:[0-5]?[0-9])+`.
    private static func isInt(_ text: ArraySlice<UInt8>) -> Bool {
        let body = dropSign(text)
        guard let first = body.first else { return false }
        if first == UInt8(ascii: "0") {
            let rest = body.dropFirst()
            if rest.isEmpty { return true }
            switch rest.first {
            case UInt8(ascii: "b"): return isRun(rest.dropFirst(), of: { $0 == 0x30 || $0 == 0x31 || $0 == 0x5F })
            case UInt8(ascii: "x"): return isRun(rest.dropFirst(), of: { isHex($0) || $0 == 0x5F })
            case UInt8(ascii: "o"): return isRun(rest.dropFirst(), of: isOctalOrUnderscore)
            default: return isRun(rest, of: isOctalOrUnderscore)
            }
        }
        guard isNonZeroDigit(first) else { return false }
        let (_, afterDigits) = span(body.dropFirst(), isDigitOrUnderscore)
        if afterDigits.isEmpty { return true }
        return isSexagesimalTail(afterDigits)
    }

    /// `[-+]?[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?`, `\.[0-9_]+([eE][-+][0-9]+)?`,
    /// `[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*`, `[-+]?\.(inf|Inf|INF)` or `\.(nan|NaN|NAN)`.
    private static func isFloat(_ text: ArraySlice<UInt8>) -> Bool {
        if ["nan", "NaN", "NAN"].contains(where: { text.elementsEqual(Array(".\($0)".utf8)) }) { return true }
        let hasSign = text.first == UInt8(ascii: "-") || text.first == UInt8(ascii: "+")
        let body = dropSign(text)
        if ["inf", "Inf", "INF"].contains(where: { body.elementsEqual(Array(".\($0)".utf8)) }) { return true }
        if body.first == UInt8(ascii: ".") {
            // Only unsigned, with at least one digit or underscore, and an exponent's sign required.
            guard !hasSign else { return false }
            let (fraction, rest) = span(body.dropFirst(), isDigitOrUnderscore)
            guard !fraction.isEmpty else { return false }
            return rest.isEmpty || isExponent(rest, signRequired: true)
        }
        guard let first = body.first, isDigit(first) else { return false }
        var (_, rest) = span(body.dropFirst(), isDigitOrUnderscore)
        if rest.first == UInt8(ascii: ":") {
            // Sexagesimal: colon groups, then a point and an optional fraction.
            guard let point = rest.firstIndex(of: UInt8(ascii: ".")) else { return false }
            return isSexagesimalTail(rest[..<point]) && isRun(rest[(point + 1)...], of: isDigitOrUnderscore, allowEmpty: true)
        }
        if rest.first == UInt8(ascii: ".") {
            rest = span(rest.dropFirst(), isDigitOrUnderscore).1
        }
        return rest.isEmpty || isExponent(rest, signRequired: false)
    }

    /// `(:[0-5]?[0-9])+`
    private static func isSexagesimalTail(_ text: ArraySlice<UInt8>) -> Bool {
        var rest = text
        guard !rest.isEmpty else { return false }
        while let colon = rest.first {
            guard colon == UInt8(ascii: ":") else { return false }
            let (digits, after) = span(rest.dropFirst(), isDigit)
            switch digits.count {
            case 1: break
            case 2: guard digits.first.map({ $0 <= UInt8(ascii: "5") }) == true else { return false }
            default: return false
            }
            rest = after
        }
        return true
    }

    /// `[eE][-+]?[0-9]+` (the sign required when asked).
    private static func isExponent(_ text: ArraySlice<UInt8>, signRequired: Bool) -> Bool {
        guard text.first == UInt8(ascii: "e") || text.first == UInt8(ascii: "E") else { return false }
        var rest = text.dropFirst()
        if rest.first == UInt8(ascii: "-") || rest.first == UInt8(ascii: "+") {
            rest = rest.dropFirst()
        } else if signRequired {
            return false
        }
        return isRun(rest, of: isDigit)
    }

    private static func dropSign(_ text: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        text.first == UInt8(ascii: "-") || text.first == UInt8(ascii: "+") ? text.dropFirst() : text
    }

    private static func span(_ text: ArraySlice<UInt8>, _ accept: (UInt8) -> Bool) -> (ArraySlice<UInt8>, ArraySlice<UInt8>) {
        let end = text.firstIndex { !accept($0) } ?? text.endIndex
        return (text[..<end], text[end...])
    }

    private static func isRun(_ text: ArraySlice<UInt8>, of accept: (UInt8) -> Bool, allowEmpty: Bool = false) -> Bool {
        (allowEmpty || !text.isEmpty) && text.allSatisfy(accept)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    private static func isNonZeroDigit(_ byte: UInt8) -> Bool { byte >= 0x31 && byte <= 0x39 }
    private static func isDigitOrUnderscore(_ byte: UInt8) -> Bool { isDigit(byte) || byte == 0x5F }
    private static func isOctalOrUnderscore(_ byte: UInt8) -> Bool { (byte >= 0x30 && byte <= 0x37) || byte == 0x5F }
    private static func isHex(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }
}
