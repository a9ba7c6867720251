/// The APNs payload the relay sends (docs/webpush-relay.md, "The APNs request"): a fixed alert,
/// `content-available` and `mutable-content`, and the still-encrypted message as `p` (body), `k`
/// (sender key) and `s` (salt) in extended Z85, plus `x` (the subscription's extra path). Written
/// byte for byte as toot-relay's Go encoder writes it: keys sorted, `<`, `>` and `&` escaped.
enum RelayPayload {
    static func encode(body: [UInt8], senderKey: [UInt8]?, salt: [UInt8]?, extra: String?) -> [UInt8] {
        var out = Array(#"{"aps":{"alert":"🎺","content-available":1,"mutable-content":1}"#.utf8)
        func field(_ key: String, _ value: String) {
            out.append(contentsOf: Array(",\"\(key)\":".utf8))
            appendGoString(value, to: &out)
        }
        if let senderKey { field("k", ExtendedZ85.encode(senderKey)) }
        field("p", ExtendedZ85.encode(body))
        if let salt { field("s", ExtendedZ85.encode(salt)) }
        if let extra, !extra.isEmpty { field("x", extra) }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// A JSON string as Go's `encoding/json` writes it (HTML-safe escaping).
    static func appendGoString(_ value: String, to out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        func unicodeEscape(_ code: UInt32) {
            out.append(contentsOf: Array("\\u".utf8))
            for shift in stride(from: 12, through: 0, by: -4) { out.append(hex[Int((code >> UInt32(shift)) & 0xF)]) }
        }
        out.append(UInt8(ascii: "\""))
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out.append(contentsOf: Array("\\\"".utf8))
            case "\\": out.append(contentsOf: Array("\\\\".utf8))
            case "\n": out.append(contentsOf: Array("\\n".utf8))
            case "\r": out.append(contentsOf: Array("\\r".utf8))
            case "\t": out.append(contentsOf: Array("\\t".utf8))
            case "<", ">", "&", "\u{2028}", "\u{2029}": unicodeEscape(scalar.value)
            case _ where scalar.value < 0x20: unicodeEscape(scalar.value)
            default: out.append(contentsOf: Array(String(scalar).utf8))
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
