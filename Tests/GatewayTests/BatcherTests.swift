import HeraldTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import DeliveryRecord

/// `Batcher`: the group commit under the PostgreSQL record's statements (docs/operations.md,
/// "Once"). Each test holds a run open on an event and looks at what the next run was given.
@Suite struct BatcherTests {
    /// Records each run's items; while `holding`, a run waits for `hold` (the runs that start
    /// once holding stopped do not).
    final class Body: Sendable {
        let runs = Mutex<[[Int]]>([])
        let holding: Mutex<Bool>
        let hold = TestEvent()
        /// Raised when the first run starts.
        let started = TestEvent()

        init(holding: Bool = false) { self.holding = Mutex(holding) }

        /// The runs from now on go at once; those holding still wait for `hold`.
        func stopHolding() { holding.withLock { $0 = false } }

        func run(_ items: [Int]) async throws -> [Int] {
            // Whether it holds is read before the run is seen: a test that sees the run knows.
            let holds = holding.withLock { $0 }
            runs.withLock { $0.append(items) }
            started.raise()
            if holds { await hold.wait() }
            if items.contains(-1) { throw Refused() }
            return items.map { $0 * 10 }
        }
    }

    struct Refused: Error {}

    @Test func aCallerAloneRunsAtOnceAndGetsItsAnswers() async throws {
        let body = Body()
        let batcher = Batcher<Int, Int>(body.run)
        #expect(try await batcher.run([1, 2, 3]) == [10, 20, 30])
        #expect(try await batcher.run([]) == [])
        #expect(body.runs.withLock { $0 } == [[1, 2, 3]])
        #expect(batcher.load == (0, 0))
    }

    /// Callers that come while a run is under way wait, and all of them make the next run: one
    /// call for three callers, each answered its own items in order.
    @Test func callersWhoCameDuringARunShareTheNextRun() async throws {
        let body = Body(holding: true)
        let batcher = Batcher<Int, Int>(body.run)
        try await withThrowingTaskGroup(of: (Int, [Int]).self) { group in
            group.addTask { (0, try await batcher.run([1])) }
            await body.started.wait()
            body.stopHolding()
            group.addTask { (1, try await batcher.run([2, 3])) }
            group.addTask { (2, try await batcher.run([4])) }
            group.addTask { (3, try await batcher.run([5, 6])) }
            await eventually { batcher.load.waiting == 3 }
            #expect(batcher.load == (1, 3))
            body.hold.raise()
            var answers: [Int: [Int]] = [:]
            for try await (caller, answer) in group { answers[caller] = answer }
            #expect(answers == [0: [10], 1: [20, 30], 2: [40], 3: [50, 60]])
        }
        let runs = body.runs.withLock { $0 }
        #expect(runs.count == 2 && runs[0] == [1])
        #expect(runs[1].sorted() == [2, 3, 4, 5, 6])
        #expect(batcher.load == (0, 0))
    }

    /// `maxItems` bounds a run without splitting a caller's items; `concurrency` runs go at once.
    @Test func aRunHoldsAtMostMaxItemsAndConcurrencyRunsGoAtOnce() async throws {
        let body = Body(holding: true)
        let batcher = Batcher<Int, Int>(concurrency: 2, maxItems: 3, body.run)
        try await withThrowingTaskGroup(of: [Int].self) { group in
            group.addTask { try await batcher.run([1]) }
            group.addTask { try await batcher.run([2]) }
            await eventually { body.runs.withLock { $0.count } == 2 }
            body.stopHolding()
            for items in [[3, 4], [5, 6], [7]] { group.addTask { try await batcher.run(items) } }
            await eventually { batcher.load.waiting == 3 }
            #expect(batcher.load == (2, 3))
            body.hold.raise()
            for try await _ in group {}
        }
        let runs = body.runs.withLock { $0 }.map { $0.count }
        #expect(runs.count == 4 && runs.allSatisfy { $0 <= 3 }, "\(runs)")
        #expect(batcher.load == (0, 0))
    }

    /// A run that throws fails its callers, and only them: the next run goes on.
    @Test func aRunThatThrowsFailsItsCallersOnly() async throws {
        let body = Body(holding: true)
        let batcher = Batcher<Int, Int>(maxItems: 2, body.run)
        let results = await withTaskGroup(of: (Int, Bool).self) { group -> [Int: Bool] in
            group.addTask { (0, (try? await batcher.run([1])) != nil) }
            await body.started.wait()
            body.stopHolding()
            group.addTask { (1, (try? await batcher.run([-1, 2])) != nil) }
            await eventually { batcher.load.waiting == 1 }
            group.addTask { (2, (try? await batcher.run([3])) != nil) }
            await eventually { batcher.load.waiting == 2 }
            body.hold.raise()
            var results: [Int: Bool] = [:]
            for await (caller, ok) in group { results[caller] = ok }
            return results
        }
        #expect(results == [0: true, 1: false, 2: true])
        #expect(body.runs.withLock { $0 } == [[1], [-1, 2], [3]])
    }

    /// A run whose error `failsQueue` names (a store that did not answer in time) fails the callers
    /// waiting for the next run as well, at once and without a run: they would otherwise wait a
    /// second time for a store that just failed to answer. The runs after them go on.
    @Test func aRunThatFailsTheQueueFailsItsWaitersWithoutARun() async throws {
        let body = Body(holding: true)
        let batcher = Batcher<Int, Int>(failsQueue: { $0 is Refused }, body.run)
        let results = await withTaskGroup(of: (Int, Bool).self) { group -> [Int: Bool] in
            group.addTask { (0, (try? await batcher.run([-1])) != nil) }
            await body.started.wait()
            body.stopHolding()
            group.addTask { (1, (try? await batcher.run([2])) != nil) }
            group.addTask { (2, (try? await batcher.run([3])) != nil) }
            await eventually { batcher.load.waiting == 2 }
            body.hold.raise()
            var results: [Int: Bool] = [:]
            for await (caller, ok) in group { results[caller] = ok }
            return results
        }
        #expect(results == [0: false, 1: false, 2: false])
        #expect(body.runs.withLock { $0 } == [[-1]])
        #expect(batcher.load == (0, 0))
        #expect(try await batcher.run([4]) == [40])
    }

    /// A run that answers a different number of answers than it had items fails its callers
    /// (`Mismatch`), rather than giving one caller another's answers.
    @Test func aRunAnsweringTheWrongCountFailsItsCallers() async {
        let batcher = Batcher<Int, Int> { items in Array(items.dropFirst()) }
        await #expect(throws: Batcher<Int, Int>.Mismatch.self) { try await batcher.run([1, 2]) }
        #expect(batcher.load == (0, 0))
    }

    /// What handed items were answered, by item.
    final class Landings: Sendable {
        let answers = Mutex<[Int: Result<[Int], any Error>]>([:])

        func landed(_ first: Int) -> @Sendable (Result<[Int], any Error>) -> Void {
            { result in self.answers.withLock { $0[first] = result } }
        }
        func value(_ first: Int) -> [Int]? { answers.withLock { try? $0[first]?.get() } }
        func stopped(_ first: Int) -> Bool {
            answers.withLock {
                guard case .failure(let error) = $0[first] else { return false }
                return error is Batcher<Int, Int>.Stopped
            }
        }
    }

    /// Items handed over (a notify's finishes after its answer) join the runs as callers' items
    /// do: a run one of them starts is led by the batcher's leader, whose task answers each one
    /// through its `landed`; the next run, started by a caller, is led by that caller.
    @Test func handedItemsAreLedByTheLeaderAndShareRunsWithCallers() async throws {
        let body = Body(holding: true)
        let batcher = Batcher<Int, Int>(body.run)
        let landings = Landings()
        try await withThrowingTaskGroup(of: [Int]?.self) { group in
            group.addTask {
                await batcher.leader().run()
                return nil
            }
            batcher.hand([1], landed: landings.landed(1))
            await body.started.wait()
            body.stopHolding()
            group.addTask { try await batcher.run([2]) }
            await eventually { batcher.load.waiting == 1 }
            batcher.hand([3, 4], landed: landings.landed(3))
            #expect(batcher.load == (1, 2))
            body.hold.raise()
            let first = try await group.next()
            #expect(first == .some([20]))
            #expect(await eventually { landings.value(1) == [10] && landings.value(3) == [30, 40] })
            batcher.hand([5], landed: landings.landed(5))
            #expect(await eventually { landings.value(5) == [50] })
            group.cancelAll()
        }
        #expect(body.runs.withLock { $0 } == [[1], [2, 3, 4], [5]])
        #expect(batcher.load == (0, 0))
    }

    /// A handed item that comes before the leader runs waits for it; the leader, told of the
    /// graceful shutdown, ends once the runs under way have ended, and an item handed after that
    /// fails at once (`Stopped`: the record's memory stands in), with no run.
    @Test func aHandedItemWaitsForTheLeaderWhichEndsAtTheShutdownAndLaterItemsFailAtOnce() async throws {
        let body = Body(holding: true)
        let batcher = Batcher<Int, Int>(body.run)
        let landings = Landings()
        batcher.hand([1], landed: landings.landed(1))
        #expect(body.runs.withLock { $0 }.isEmpty && batcher.load == (1, 0))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let services = ServiceGroup(services: [batcher.leader()], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            await body.started.wait()
            await services.triggerGracefulShutdown()
            // The run under way is the leader's to end: it has not returned yet.
            #expect(landings.value(1) == nil)
            body.stopHolding()
            body.hold.raise()
            try await group.next()
        }
        #expect(landings.value(1) == [10])
        batcher.hand([2], landed: landings.landed(2))
        #expect(landings.stopped(2))
        #expect(body.runs.withLock { $0 } == [[1]])
        #expect(batcher.load == (0, 0))
    }

    /// Cancelled (the shutdown's limit passed), the leader ends at once when it has nothing under
    /// way, and an item handed after that fails at once rather than waiting for a run.
    @Test func aCancelledLeaderEndsAndLaterItemsFailAtOnce() async throws {
        let body = Body()
        let batcher = Batcher<Int, Int>(body.run)
        let landings = Landings()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await batcher.leader().run() }
            batcher.hand([1], landed: landings.landed(1))
            #expect(await eventually { landings.value(1) == [10] })
            group.cancelAll()
            await group.waitForAll()
        }
        batcher.hand([2], landed: landings.landed(2))
        #expect(landings.stopped(2))
        #expect(body.runs.withLock { $0 } == [[1]])
        #expect(batcher.load == (0, 0))
    }
}
