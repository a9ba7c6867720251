import NIOPosix

/// The parser's two working buffers (an object's members and an array's elements while they are
/// read), kept by each thread from one parse to the next, so that a parse allocates only what it
/// returns (docs/architecture.md, "Values on the notify path"). A parse runs start to end on one
/// thread (it never suspends), so a thread's buffers are never shared; a buffer grown past
/// `keptCapacity` by a large body is let go, not kept.
final class JSONScratch: @unchecked Sendable {
    var members: [(key: String, value: JSONValue)] = []
    var elements: [JSONValue] = []

    /// Room for a notify's members, made at the thread's first parse.
    static var capacity: Int { 32 }
    /// The most a thread keeps between parses.
    static var keptCapacity: Int { 256 }

    private static let perThread = ThreadSpecificVariable<JSONScratch>()

    /// The calling thread's buffers (made at its first parse), taken out for one parse: the parse
    /// holds the only reference while it runs, so appending never copies.
    static func take() -> (members: [(key: String, value: JSONValue)], elements: [JSONValue]) {
        guard let scratch = perThread.currentValue else {
            var members: [(key: String, value: JSONValue)] = []
            var elements: [JSONValue] = []
            members.reserveCapacity(capacity)
            elements.reserveCapacity(capacity)
            return (members, elements)
        }
        defer {
            scratch.members = []
            scratch.elements = []
        }
        return (scratch.members, scratch.elements)
    }

    /// The capacities the calling thread keeps, if it has parsed (tests).
    static var held: (members: Int, elements: Int)? {
        perThread.currentValue.map { ($0.members.capacity, $0.elements.capacity) }
    }

    /// Gives the buffers back after a parse, emptied, unless they grew past `keptCapacity`.
    static func giveBack(members: consuming [(key: String, value: JSONValue)], elements: consuming [JSONValue]) {
        members.removeAll(keepingCapacity: true)
        elements.removeAll(keepingCapacity: true)
        let scratch: JSONScratch
        if let existing = perThread.currentValue {
            scratch = existing
        } else {
            scratch = JSONScratch()
            perThread.currentValue = scratch
        }
        scratch.members = members.capacity <= keptCapacity ? members : []
        scratch.elements = elements.capacity <= keptCapacity ? elements : []
    }
}
