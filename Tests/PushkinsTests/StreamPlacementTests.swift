import Testing

@testable import HeraldUpstream

/// Which connection of an HTTP/2 pool a stream goes on, without a socket: the caller's own event
/// loop's while it has a free stream, else the least busy; never more than the limit on one while
/// the pool's queue admits no more than all of them hold.
@Suite struct StreamPlacementTests {
    @Test func aLocalConnectionWithAFreeStreamIsTakenFirst() {
        var placement = StreamPlacement(connections: 2, limit: 2)
        #expect(placement.place { $0 == 1 } == 1)
        #expect(placement.place { $0 == 1 } == 1)
        #expect(placement.inFlight == [0, 2])
        // Its own loop's connection is full: the least busy takes the stream, on another loop.
        #expect(placement.place { $0 == 1 } == 0)
        #expect(placement.place { $0 == 1 } == 0)
        #expect(placement.inFlight == [2, 2])
        placement.done(1)
        #expect(placement.place { $0 == 0 } == 1)  // loop 0's is full; 1 has the free stream
    }

    /// Requests from one loop do not crowd the other loop's requests off their connection: once
    /// its own connection is full, a loop's next stream goes to the least busy, and the streams
    /// freed go back to whichever loop asks next.
    @Test func loopsShareTheConnectionsFairly() {
        var placement = StreamPlacement(connections: 2, limit: 3)
        var onLoop: [Int: [Int]] = [0: [], 1: []]
        for n in 0..<6 {
            let loop = n % 2
            onLoop[loop, default: []].append(placement.place { $0 == loop })
        }
        #expect(onLoop[0] == [0, 0, 0])
        #expect(onLoop[1] == [1, 1, 1])
        #expect(placement.inFlight == [3, 3])
    }

    @Test func withoutALocalConnectionTheLeastBusyIsTaken() {
        var placement = StreamPlacement(connections: 3, limit: 10)
        #expect(placement.place { _ in false } == 0)
        #expect(placement.place { _ in false } == 1)
        #expect(placement.place { _ in false } == 2)
        placement.done(1)
        #expect(placement.place { _ in false } == 1)
        #expect(placement.inFlight == [1, 1, 1])
    }
}
