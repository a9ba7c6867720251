import Testing

@testable import HeraldCore

/// `JSONScratch`: the parser's working buffers are the thread's from one parse to the next, and a
/// large body's are let go rather than kept.
@Suite struct JSONScratchTests {
    @Test func parsesOnOneThreadShareItsBuffersAndKeepNoLargeOnes() throws {
        let small = #"{"a": [1, 2, {"b": "c"}], "d": {"e": []}}"#
        let first = try JSONParser.parse(small)
        // The thread keeps its buffers, emptied, at the size a notify needs.
        let held = try #require(JSONScratch.held)
        #expect(held.members >= 2 && held.members <= JSONScratch.keptCapacity)
        #expect(held.elements >= 3 && held.elements <= JSONScratch.keptCapacity)
        #expect(held.document >= 3 && held.document <= JSONScratch.keptCapacity)
        // A body of many elements grows them past what is kept: they are let go.
        let large = "[" + (0..<1_000).map(String.init).joined(separator: ", ") + "]"
        let parsed = try JSONParser.parse(large)
        #expect(parsed.arrayValue?.count == 1_000)
        #expect(parsed.arrayValue?.last == .int(999))
        #expect((JSONScratch.held?.elements ?? 0) <= JSONScratch.keptCapacity)
        // The next parse on the thread reads the same as the first; a failed one leaves nothing behind.
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(#"{"a": [1, 2, {"b": }"#) }
        #expect(try JSONParser.parse(small) == first)
        #expect(first["a"]?.arrayValue?.count == 3)
    }
}
