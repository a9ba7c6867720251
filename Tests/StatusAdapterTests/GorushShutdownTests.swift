import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import Metrics
import Synchronization
import Testing

@testable import StatusAdapter

/// gorush's workers at a shutdown whose grace period ended before their turn (docs/operations.md,
/// "Shutdown"): cancelled, they stop at once, and a job whose push was cut short stays queued.
@Suite struct GorushShutdownTests {
    /// Records which jobs were completed (deleted from the queue); queues nothing.
    final class RecordingQueue: GorushQueueStore {
        let completed = Mutex<[Int64]>([])
        func enqueueGorush(_ bodies: [[UInt8]], maxJobs: Int, maxBytes: Int) async throws -> Bool { true }
        func claimGorush(limit: Int, now: Date, until: Date) async throws -> [QueuedGorushJob] { [] }
        func completeGorush(id: Int64) async throws { completed.withLock { $0.append(id) } }
        func recoverGorushClaims() async throws {}
        func gorushQueueDepth() async throws -> (jobs: Int, bytes: Int) { (0, 0) }
    }

    static func api(_ queue: RecordingQueue) -> GorushAPI {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return GorushAPI(
            config: StatusConfig().gorush, delivery: PushkinStatusSender(apns: nil, fcm: nil), queue: { queue }, logger: logger,
            metrics: NOOPMetricsHandler.instance, clock: SystemClock())
    }

    @Test(.timeLimit(.minutes(1))) func aDoorbellWaitEndsWhenItsTaskIsCancelled() async {
        let bell = Doorbell(clock: SystemClock())
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await bell.wait(upTo: .seconds(3600)) }
            group.cancelAll()
            await group.waitForAll()
        }
    }

    @Test(.timeLimit(.minutes(1))) func workersCancelledWithoutAGracefulShutdownStop() async {
        let api = Self.api(RecordingQueue())
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await api.run() }
            group.cancelAll()
            await group.waitForAll()
        }
    }

    @Test func aJobWhosePushWasCutShortByCancellationStaysQueued() async {
        let queue = RecordingQueue()
        let api = Self.api(queue)
        let job = QueuedGorushJob(id: 7, body: Array(#"{"tokens":["0a"],"platform":1,"message":"hi"}"#.utf8))
        await withTaskGroup(of: Void.self) { group in
            group.cancelAll()
            group.addTask { await api.process(job, store: queue) }
        }
        #expect(queue.completed.withLock { $0 }.isEmpty)
        // Not cancelled, the same job is sent (here: it fails, no app) and removed.
        await api.process(job, store: queue)
        #expect(queue.completed.withLock { $0 } == [7])
    }
}
