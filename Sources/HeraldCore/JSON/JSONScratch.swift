import NIOPosix

/// The parser's working buffers (an object's members and an array's elements while they are
/// read, and the members of the document being made), kept by each thread from one parse to the
/// next, so that a parse allocates only what it returns (docs/architecture.md, "Values on the
/// notify path"). A parse runs start to end on one thread (it never suspends), so a thread's
/// buffers are never shared; a buffer grown past `keptCapacity` by a large body is let go, not kept.
final class JSONScratch: @unchecked Sendable {
    struct Buffers {
        var members: [JSONObject.Element] = []
        var elements: [JSONValue] = []
        var document: [JSONObject.Element] = []
    }

    var buffers = Buffers()

    /// Room for a notify's members, made at the thread's first parse.
    static var capacity: Int { 32 }
    /// The most a thread keeps between parses.
    static var keptCapacity: Int { 256 }

    private static let perThread = ThreadSpecificVariable<JSONScratch>()

    /// The calling thread's buffers (made at its first parse), taken out for one parse: the parse
    /// holds the only reference while it runs, so appending never copies.
    static func take() -> Buffers {
        guard let scratch = perThread.currentValue else {
            var made = Buffers()
            made.members.reserveCapacity(capacity)
            made.elements.reserveCapacity(capacity)
            made.document.reserveCapacity(capacity)
            return made
        }
        defer { scratch.buffers = Buffers() }
        return scratch.buffers
    }

    /// The capacities the calling thread keeps, if it has parsed (tests).
    static var held: (members: Int, elements: Int, document: Int)? {
        perThread.currentValue.map { ($0.buffers.members.capacity, $0.buffers.elements.capacity, $0.buffers.document.capacity) }
    }

    /// Gives the buffers back after a parse, emptied, unless they grew past `keptCapacity`.
    static func giveBack(_ buffers: consuming Buffers) {
        buffers.members.removeAll(keepingCapacity: true)
        buffers.elements.removeAll(keepingCapacity: true)
        buffers.document.removeAll(keepingCapacity: true)
        if buffers.members.capacity > keptCapacity { buffers.members = [] }
        if buffers.elements.capacity > keptCapacity { buffers.elements = [] }
        if buffers.document.capacity > keptCapacity { buffers.document = [] }
        let scratch: JSONScratch
        if let existing = perThread.currentValue {
            scratch = existing
        } else {
            scratch = JSONScratch()
            perThread.currentValue = scratch
        }
        scratch.buffers = buffers
    }
}
