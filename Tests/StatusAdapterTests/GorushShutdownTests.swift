import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import Metrics
import Pushkins
import Synchronization
import Testing

@testable import DeliveryRecord
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
            config: StatusConfig().gorush, delivery: PushkinStatusSender(pushkins: [:]), queue: { queue }, logger: logger,
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

    /// A delivery record in which another instance holds every push and has not finished it.
    struct HeldElsewhere: DeliveryRecords {
        func claim(_ claims: [RecordClaimRequest], instance: String, now: Date) async throws -> [RecordClaim] {
            claims.map { _ in .heldElsewhere }
        }
        func finish(_ finishes: [RecordFinish], heard: Bool, now: Date) async throws {}
        func finish(
            _ finishes: [RecordFinish], heard: Bool, now: Date, landed: @escaping @Sendable (Result<Void, any Error>) -> Void
        ) { landed(.success(())) }
        func trace(_ start: TraceStart, _ end: TraceEnd, startedAt: Date, instance: String, now: Date) async throws {}
        func deliveries(_ query: DeliveryQuery, now: Date) async throws -> [TracedDelivery] { [] }
        var health: ComponentHealth? { nil }
    }

    /// docs/operations.md, "Once": a job whose push another instance claimed and has not finished
    /// (a worker killed mid-send) is neither sent again nor removed: it stays queued and comes back
    /// when its claim runs out, by when the push is recorded or its claim taken over.
    @Test func aJobWhosePushIsHeldElsewhereStaysQueued() async {
        let queue = RecordingQueue()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let counters = CounterCache(factory: NOOPMetricsHandler.instance)
        let memory = MemoryDeliveryRecords(window: .seconds(60), takeover: .seconds(30), maxEntries: 100, maxBytes: 1 << 20)
        let guardian = RepeatGuard(store: HeldElsewhere(), fallback: memory, clock: SystemClock(), counters: counters, logger: logger)
        let dispatcher = Dispatcher(
            pushkins: [], counters: counters, once: Once(guardian: guardian, answerWithin: .seconds(20)), clock: SystemClock())
        let api = GorushAPI(
            config: StatusConfig().gorush, delivery: PushkinStatusSender(pushkins: [:]), queue: { queue }, logger: logger,
            metrics: NOOPMetricsHandler.instance, dispatcher: dispatcher, clock: SystemClock())
        // A notification with a `notif_id`: only such a one can be a repeat (docs/operations.md, "Once").
        let job = QueuedGorushJob(id: 9, body: Array(#"{"tokens":["0a"],"platform":1,"message":"hi","notif_id":"n9"}"#.utf8))
        await api.process(job, store: queue)
        #expect(queue.completed.withLock { $0 }.isEmpty)
        #expect(api.appStats()["failure_tasks"] == 0)
        // Without the record, the same job is sent (here: it fails, no app) and removed.
        await Self.api(queue).process(job, store: queue)
        #expect(queue.completed.withLock { $0 } == [9])
    }
}
