/// An ordered JSON object: key order is kept from the input and on output. Setting a key that is
/// there keeps its place (as a Python dict does, so a repeated key in a body keeps its first place
/// and its last value); a new key goes last.
///
/// Its members are one array of pairs, one allocation for an object of any size (an ordered
/// dictionary keeps its keys and values apart, two). A small object is searched from the start;
/// one of more than `indexedFrom` members also keeps where each key is, so that a body of many
/// thousands of keys is still read in linear time (docs/architecture.md, "Values on
/// the notify path").
package struct JSONObject: Sendable {
    package typealias Element = (key: String, value: JSONValue)

    private var members: ContiguousArray<Element>
    /// Where each key is, from `indexedFrom` members on.
    private var positions: [String: Int]?

    /// The size from which an object keeps an index of its keys.
    static let indexedFrom = 16

    package init() { members = [] }

    package init(minimumCapacity: Int) {
        members = []
        members.reserveCapacity(minimumCapacity)
    }

    /// The value of `key`; setting nil removes the key.
    package subscript(key: String) -> JSONValue? {
        get { index(forKey: key).map { members[$0].value } }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            if let found = index(forKey: key) {
                members[found].value = newValue
            } else {
                members.append((key, newValue))
                if positions != nil {
                    positions?[key] = members.count - 1
                } else if members.count > Self.indexedFrom {
                    indexKeys()
                }
            }
        }
    }

    /// The position of `key`, if it is there.
    package func index(forKey key: String) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }

    /// Removes `key`, keeping the others' order; its value, if it was there.
    @discardableResult
    package mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let found = index(forKey: key) else { return nil }
        let removed = members.remove(at: found).value
        if positions != nil {
            if members.count > Self.indexedFrom { indexKeys() } else { positions = nil }
        }
        return removed
    }

    package mutating func reserveCapacity(_ capacity: Int) { members.reserveCapacity(capacity) }

    /// The keys, in order.
    package var keys: [String] { members.map(\.key) }

    /// The values, in order.
    package var values: LazyMapCollection<ContiguousArray<Element>, JSONValue> { members.lazy.map(\.value) }

    /// This object with `other`'s members set in it, in `other`'s order; `combine` picks a value
    /// for a key both have.
    package func merging(_ other: JSONObject, uniquingKeysWith combine: (JSONValue, JSONValue) throws -> JSONValue) rethrows
        -> JSONObject
    {
        var merged = self
        for (key, value) in other { merged[key] = try merged[key].map { try combine($0, value) } ?? value }
        return merged
    }

    /// The members for which `isIncluded` holds, in order.
    package func filter(_ isIncluded: (Element) throws -> Bool) rethrows -> JSONObject {
        var kept = JSONObject()
        for member in members where try isIncluded(member) { kept[member.key] = member.value }
        return kept
    }

    private mutating func indexKeys() {
        var positions = [String: Int](minimumCapacity: members.count)
        for (position, member) in members.enumerated() { positions[member.key] = position }
        self.positions = positions
    }
}

extension JSONObject: RandomAccessCollection {
    package var startIndex: Int { members.startIndex }
    package var endIndex: Int { members.endIndex }
    package subscript(position: Int) -> Element { members[position] }

    /// The members' own iterator. A `for` loop over an object in another module would otherwise
    /// go through `IndexingIterator` and the collection's generic `subscript.read`, whose
    /// coroutine takes a heap allocation for every member it yields (a key and a value do not fit
    /// its frame).
    package func makeIterator() -> ContiguousArray<Element>.Iterator { members.makeIterator() }
}

extension JSONObject: Equatable {
    /// The same keys with equal values, in the same order.
    package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(minimumCapacity: elements.count)
        for (key, value) in elements { self[key] = value }
    }
}

extension JSONObject: CustomStringConvertible {
    package var description: String {
        "[" + members.map { "\(String(reflecting: $0.key)): \($0.value)" }.joined(separator: ", ") + "]"
    }
}
