package import HeraldCore
import OrderedCollections
import Pushkins
import Yams

/// Reads YAML into `ConfigValue`, keeping mapping order.
package enum YAMLLoader {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package static func load(_ text: String) throws(Failure) -> ConfigValue {
        let node: Node?
        do {
            // No resolver: Yams' would match every scalar with NSRegularExpression
            // (`YAMLImplicitType` says why and does the same).
            node = try Yams.compose(yaml: text, .basic)
        } catch let error as YamlError {
            throw Failure(description: "invalid YAML: \(summary(error))")
        } catch {
            throw Failure(description: "invalid YAML: \(error)")
        }
        guard let node else { return .map([:]) }
        return try convert(node, path: "")
    }

    /// One line: the problem and where it is, without the document Yams appends.
    static func summary(_ error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return "\(problem) at line \(mark.line), column \(mark.column)"
        case .duplicatedKeysInMapping(let duplicates, let context):
            return "duplicate key(s) \(duplicates.joined(separator: ", ")) at line \(context.mark.line)"
        case .reader(let problem, let offset, _, _):
            return "\(problem) at byte \(offset ?? 0)"
        default:
            return String(describing: error).split(separator: "\n").first.map(String.init) ?? "unreadable"
        }
    }

    private static func convert(_ node: Node, path: String) throws(Failure) -> ConfigValue {
        switch node {
        case .scalar(let scalar):
            // `description` is the tag as written: empty when there was none.
            let written = scalar.tag.description
            switch written.isEmpty ? YAMLImplicitType.of(scalar.string).tag : written {
            case "tag:yaml.org,2002:null": return .null
            case "tag:yaml.org,2002:bool": if let b = node.bool { return .bool(b) }
            case "tag:yaml.org,2002:int": if let i = node.int { return .int(i) }
            case "tag:yaml.org,2002:float": if let d = node.float { return .double(d) }
            default: break
            }
            return .string(scalar.string)
        case .sequence(let sequence):
            var items: [ConfigValue] = []
            for (index, item) in sequence.enumerated() { items.append(try convert(item, path: "\(path)[\(index)]")) }
            return .list(items)
        case .mapping(let mapping):
            var map = OrderedDictionary<String, ConfigValue>()
            for (key, value) in mapping {
                guard let name = key.string else { throw Failure(description: "\(path): mapping keys must be strings") }
                map[name] = try convert(value, path: path.isEmpty ? name : "\(path).\(name)")
            }
            return .map(map)
        case .alias:
            throw Failure(description: "\(path): YAML aliases are not supported")
        }
    }
}
