package import OrderedCollections

/// A YAML document reduced to the JSON-like values a config can hold, with mapping order kept.
package enum ConfigValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case list([ConfigValue])
    case map(OrderedDictionary<String, ConfigValue>)

    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .double: return "a number"
        case .string: return "a string"
        case .list: return "a list"
        case .map: return "a mapping"
        }
    }

    /// The value as JSON, for keys such as `default_payload` or `fcm_options` that are passed on.
    package var json: JSONValue {
        switch self {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(Int64(i))
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .list(let l): return .array(l.map(\.json))
        case .map(let m):
            var o = JSONObject()
            for (k, v) in m { o[k] = v.json }
            return .object(o)
        }
    }
}
