import Pushkins
import Synchronization
import Testing

@testable import StatusAdapter

/// Concurrent writes share a batch; every caller returns once its own entry is written, with its
/// batch's error.
@Suite struct GroupCommitTests {
    struct Failed: Error, Equatable {}

    /// Records each batch; the first write waits for `release`, and a batch holding `failing` fails.
    final class Recorder: Sendable {
        let batches = Mutex<[[Int]]>([])
        let release = ReadinessGate<Void>()
        let failing: Int?

        init(failing: Int? = nil) { self.failing = failing }

        func write(_ entries: [Int]) async throws {
            let first = batches.withLock { batches in
                batches.append(entries)
                return batches.count == 1
            }
            if first { try await release.wait() }
            if let failing, entries.contains(failing) { throw Failed() }
        }
    }

    /// What the callers saw, shared with their tasks.
    final class Seen<Value: Sendable>: Sendable {
        let value: Mutex<Value>
        init(_ initial: Value) { value = Mutex(initial) }
    }

    @Test func writesThatArriveDuringAWriteGoTogetherInTheNext() async throws {
        let recorder = Recorder()
        let commit = GroupCommit<Int> { try await recorder.write($0) }
        let returned = Seen<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await commit.submit(0)
                returned.value.withLock { $0.append(0) }
            }
            while recorder.batches.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(1)) }
            for entry in 1...49 {
                group.addTask {
                    try await commit.submit(entry)
                    returned.value.withLock { $0.append(entry) }
                }
            }
            while commit.queuedCount < 49 { try await Task.sleep(for: .milliseconds(1)) }
            #expect(returned.value.withLock { $0.isEmpty })  // nobody returns before the first write ends
            recorder.release.open(())
            try await group.waitForAll()
        }
        let batches = recorder.batches.withLock { $0 }
        #expect(batches.count == 2)
        #expect(batches.first == [0])
        #expect(batches.last?.sorted() == Array(1...49))
        #expect(returned.value.withLock { $0.sorted() } == Array(0...49))
        #expect(commit.queuedCount == 0)
        // Writing again starts a new batch at once.
        try await commit.submit(50)
        #expect(recorder.batches.withLock { $0.last } == [50])
    }

    @Test func aFailedBatchFailsEachOfItsCallersAndNoOther() async throws {
        let recorder = Recorder(failing: 7)
        let commit = GroupCommit<Int> { try await recorder.write($0) }
        let outcomes = Seen<[Int: Bool]>([:])
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                let ok = (try? await commit.submit(0)) != nil
                outcomes.value.withLock { $0[0] = ok }
            }
            while recorder.batches.withLock({ $0.isEmpty }) { try? await Task.sleep(for: .milliseconds(1)) }
            for entry in 1...9 {
                group.addTask {
                    let ok = (try? await commit.submit(entry)) != nil
                    outcomes.value.withLock { $0[entry] = ok }
                }
            }
            while commit.queuedCount < 9 { try? await Task.sleep(for: .milliseconds(1)) }
            recorder.release.open(())
        }
        let result = outcomes.value.withLock { $0 }
        #expect(result[0] == true)
        #expect((1...9).allSatisfy { result[$0] == false })
        await #expect(throws: Never.self) { try await commit.submit(10) }
    }
}
