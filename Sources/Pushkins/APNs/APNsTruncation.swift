package import HeraldCore

/// Fits an APNs payload into `limit` bytes as Sygnal does (docs/compatibility/apns.md, "Payload"): while the body (JSON
/// with Python's separators, raw UTF-8) is too long, remove the last code point of the longest
/// (by UTF-8 bytes; ties to the first) of `aps.alert` (a string) or `aps.alert.body` and
/// `aps.alert.loc-args[i]`. Characters are never split; nothing else is touched.
package enum APNsTruncation {
    package static let maxBodyBytes = 4096

    /// The encoded body, or nil when even empty strings do not fit.
    package static func fit(_ payload: JSONObject, limit: Int = maxBodyBytes) -> [UInt8]? {
        var bytes = JSONWriter.serialize(.object(payload), style: .python)
        guard bytes.count > limit else { return bytes }
        guard case .object(var aps)? = payload["aps"] else { return nil }

        // The choppable strings, as arrays of scalars, in Sygnal's order.
        enum Slot { case alertString, body, locArg(Int) }
        var slots: [(Slot, [Unicode.Scalar], Int)] = []  // slot, scalars, UTF-8 length
        var alertObject: JSONObject?
        switch aps["alert"] {
        case .string(let s)?:
            slots.append((.alertString, Array(s.unicodeScalars), s.utf8.count))
        case .object(let alert)?:
            alertObject = alert
            if case .string(let body)? = alert["body"] { slots.append((.body, Array(body.unicodeScalars), body.utf8.count)) }
            if case .array(let args)? = alert["loc-args"] {
                for (i, arg) in args.enumerated() {
                    if case .string(let s) = arg { slots.append((.locArg(i), Array(s.unicodeScalars), s.utf8.count)) }
                }
            }
        default:
            return nil
        }

        var size = bytes.count
        while size > limit {
            var best = -1
            for (i, slot) in slots.enumerated() where slot.2 > 0 && (best < 0 || slot.2 > slots[best].2) { best = i }
            guard best >= 0, let removed = slots[best].1.popLast() else { return nil }
            slots[best].2 -= UTF8.width(removed)
            size -= JSONWriter.encodedLength(of: removed)
        }

        for (slot, scalars, _) in slots {
            let text = JSONValue.string(String(String.UnicodeScalarView(scalars)))
            switch slot {
            case .alertString: aps["alert"] = text
            case .body: alertObject?["body"] = text
            case .locArg(let i):
                if case .array(var args)? = alertObject?["loc-args"] {
                    args[i] = text
                    alertObject?["loc-args"] = .array(args)
                }
            }
        }
        if let alertObject { aps["alert"] = .object(alertObject) }
        var result = payload
        result["aps"] = .object(aps)
        bytes = JSONWriter.serialize(.object(result), style: .python)
        return bytes.count <= limit ? bytes : nil
    }
}
