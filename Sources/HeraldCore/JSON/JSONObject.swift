/// An ordered JSON object: key order is kept from the input and on output. Setting a key that is
/// there keeps its place (as a Python dict does, so a repeated key in a body keeps its first place
/// and its last value); a new key goes last.
///
/// A parsed object is a window on its document: the parser puts every object of a body (outside
/// its arrays) in one array of members, and each object is a range of it (docs/architecture.md,
/// "The notify's JSON as documents"). An object that is changed, or made, has its members as one
/// array of its own; one of more than `indexedFrom` members also keeps where each key is, so that
/// a body of many thousands of keys is still read in linear time. Which of the two an object is
/// is not seen from outside: what it reads, writes and compares is the same.
package struct JSONObject: Sendable {
    package typealias Element = (key: String, value: JSONValue)

    /// The object's own members, or the document they lie in.
    private var storage: ContiguousArray<Element>
    private var form: Form

    private enum Form: Sendable {
        /// `storage` is the object's members; `positions`, where each key is, from `indexedFrom` members on.
        case own(positions: [String: Int]?)
        /// Members `start..<start + count` of `storage`, a parsed document.
        case document(start: Int32, count: Int32)
        /// The same, as a document holds its own objects (without itself, which would be a cycle of
        /// references): made a `.document` on `storage` as it is read, never seen outside.
        case pending(start: Int32, count: Int32)
    }

    /// The size from which an object of its own keeps an index of its keys (a parsed one has its own members from this size on).
    static let indexedFrom = 16

    package init() {
        storage = []
        form = .own(positions: nil)
    }

    package init(minimumCapacity: Int) {
        self.init()
        storage.reserveCapacity(minimumCapacity)
    }

    private init(storage: ContiguousArray<Element>, form: Form) {
        self.storage = storage
        self.form = form
    }

    /// The first member's place in `storage`.
    private var base: Int {
        switch form {
        case .own: return 0
        case .document(let start, _), .pending(let start, _): return Int(start)
        }
    }

    /// A member of `storage` as it is read: an object pending in the document becomes a window on it.
    @inline(__always)
    private func bound(_ member: Element) -> Element {
        guard case .object(let inner) = member.value, case .pending(let start, let count) = inner.form else { return member }
        return (member.key, .object(JSONObject(storage: storage, form: .document(start: start, count: count))))
    }

    /// The value of `key`; setting nil removes the key.
    package subscript(key: String) -> JSONValue? {
        get { index(forKey: key).map { self[$0].value } }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            let found = index(forKey: key)
            makeOwn(extra: found == nil ? 1 : 0)
            if let found {
                storage[found].value = newValue
            } else {
                storage.append((key, newValue))
                if case .own(var positions?) = form {
                    form = .own(positions: nil)
                    positions[key] = storage.count - 1
                    form = .own(positions: positions)
                } else if storage.count > Self.indexedFrom {
                    indexKeys()
                }
            }
        }
    }

    /// The position of `key`, if it is there.
    package func index(forKey key: String) -> Int? {
        switch form {
        case .own(let positions):
            if let positions { return positions[key] }
            return storage.firstIndex { $0.key == key }
        case .document(let start, let count), .pending(let start, let count):
            let first = Int(start)
            for place in first..<first + Int(count) where storage[place].key == key { return place - first }
            return nil
        }
    }

    /// Removes `key`, keeping the others' order; its value, if it was there.
    @discardableResult
    package mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let found = index(forKey: key) else { return nil }
        makeOwn(extra: 0)
        let removed = storage.remove(at: found).value
        if case .own(.some) = form {
            form = .own(positions: nil)
            if storage.count > Self.indexedFrom { indexKeys() }
        }
        return removed
    }

    package mutating func reserveCapacity(_ capacity: Int) {
        makeOwn(extra: Swift.max(0, capacity - count))
        storage.reserveCapacity(capacity)
    }

    /// The keys, in order.
    package var keys: [String] { map(\.key) }

    /// The values, in order.
    package var values: LazyMapCollection<JSONObject, JSONValue> { lazy.map(\.value) }

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
        for member in self where try isIncluded(member) { kept[member.key] = member.value }
        return kept
    }

    /// Before a change: a window on a document becomes an object of its own (with room for `extra`
    /// more members), its objects windows on the same document.
    private mutating func makeOwn(extra: Int) {
        if case .own = form { return }
        var own = ContiguousArray<Element>()
        own.reserveCapacity(count + extra)
        for member in self { own.append(member) }
        storage = own
        form = .own(positions: nil)
        if storage.count > Self.indexedFrom { indexKeys() }
    }

    private mutating func indexKeys() {
        var positions = [String: Int](minimumCapacity: storage.count)
        for (position, member) in storage.enumerated() { positions[member.key] = position }
        form = .own(positions: positions)
    }
}

// MARK: Documents

extension JSONObject {
    /// The parser's: an object whose members are `start..<start + count` of the document being made.
    init(pendingAt start: Int, count: Int) {
        self.init(storage: [], form: .pending(start: Int32(start), count: Int32(count)))
    }

    /// `value` as read from `document`, which holds it: an object pending in it becomes a window on it.
    static func bind(_ value: JSONValue, in document: ContiguousArray<Element>) -> JSONValue {
        guard case .object(let inner) = value, case .pending(let start, let count) = inner.form else { return value }
        return .object(JSONObject(storage: document, form: .document(start: start, count: count)))
    }

    /// Where the object lies, when it is pending in a document being made (the parser's).
    var pendingRange: Range<Int>? {
        guard case .pending(let start, let count) = form else { return nil }
        return Int(start)..<Int(start) + Int(count)
    }

    /// Whether the object is a window on a parsed document (tests).
    var isWindow: Bool {
        if case .document = form { return true }
        return false
    }
}

extension JSONObject: RandomAccessCollection {
    package var startIndex: Int { 0 }
    package var endIndex: Int {
        switch form {
        case .own: return storage.count
        case .document(_, let count), .pending(_, let count): return Int(count)
        }
    }
    package subscript(position: Int) -> Element { bound(storage[base + position]) }

    /// The members' own iterator. A `for` loop over an object in another module would otherwise
    /// go through `IndexingIterator` and the collection's generic `subscript.read`, whose
    /// coroutine takes a heap allocation for every member it yields (a key and a value do not fit
    /// its frame).
    package func makeIterator() -> Iterator { Iterator(object: self, place: base, end: base + count) }

    package struct Iterator: IteratorProtocol {
        fileprivate let object: JSONObject
        fileprivate var place: Int
        fileprivate let end: Int

        package mutating func next() -> Element? {
            guard place < end else { return nil }
            defer { place += 1 }
            return object.bound(object.storage[place])
        }
    }
}

extension JSONObject: Equatable {
    /// The same keys with equal values, in the same order.
    package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.key == $1.key && $0.value == $1.value }
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
        "[" + map { "\(String(reflecting: $0.key)): \($0.value)" }.joined(separator: ", ") + "]"
    }
}
