import CoreMetrics
import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import DeliveryRecord

/// docs/operations.md, "Once": with the record in PostgreSQL a notify's finishes are written after
/// its answer, beside the connection's next request. A repeat that comes meanwhile waits for the
/// finish, then claims from the record, as it would on another instance: a heard answer's repeat
/// is sent again. It does not take the outcome this instance has not written yet.
@Suite struct RepeatDuringFinishTests {
    /// A record whose finishes wait for `release`; it says `claimed` to every claim, as
    /// PostgreSQL does once a heard finish has let the key go, and keeps what it was asked, in order.
    final class HeldFinishes: DeliveryRecords {
        typealias Landed = @Sendable (Result<Void, any Error>) -> Void
        let calls = Mutex<[String]>([])
        private let held = Mutex<(released: Bool, landed: [Landed])>((false, []))

        /// The finishes held land, and later ones at once.
        func release() {
            let landed = held.withLock { held in
                held.released = true
                defer { held.landed = [] }
                return held.landed
            }
            for land in landed {
                calls.withLock { $0.append("finished") }
                land(.success(()))
            }
        }

        func claim(_ claims: [RecordClaimRequest], instance: String, now: Date) async throws -> [RecordClaim] {
            calls.withLock { $0.append("claim") }
            return claims.map { _ in .claimed }
        }
        func finish(_ finishes: [RecordFinish], heard: Bool, now: Date) async throws {
            try await withCheckedThrowingContinuation { continuation in
                finish(finishes, heard: heard, now: now) { continuation.resume(with: $0) }
            }
        }
        func finish(_ finishes: [RecordFinish], heard: Bool, now: Date, landed: @escaping Landed) {
            calls.withLock { $0.append("finish \(heard ? "heard" : "unheard")") }
            let now = held.withLock { held in
                if !held.released { held.landed.append(landed) }
                return held.released
            }
            guard now else { return }
            calls.withLock { $0.append("finished") }
            landed(.success(()))
        }
        func trace(_ start: TraceStart, _ end: TraceEnd, startedAt: Date, instance: String, now: Date) async throws {}
        func deliveries(_ query: DeliveryQuery, now: Date) async throws -> [TracedDelivery] { [] }
        var health: ComponentHealth? { nil }
    }

    /// A guard over a `HeldFinishes` store, and the key of one delivery.
    static func guarded() -> (HeldFinishes, RepeatGuard, RepeatKey) {
        let store = HeldFinishes()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let memory = MemoryDeliveryRecords(window: .seconds(60), takeover: .seconds(30), maxEntries: 100, maxBytes: 1 << 20)
        let guardian = RepeatGuard(
            store: store, fallback: memory, clock: SystemClock(), counters: CounterCache(factory: NOOPMetricsHandler.instance),
            logger: logger)
        return (store, guardian, RepeatKey(["$event", "com.example.app", "pushkey"]))
    }

    @Test func aRepeatWhileAHeardFinishIsWrittenWaitsForItAndIsSentAgain() async throws {
        let (store, guardian, key) = Self.guarded()
        guard case .send = await guardian.claim([RecordClaimRequest(key)], app: "com.example.app").first else {
            Issue.record("the first claim is not sent")
            return
        }
        let finish = try #require(await guardian.settleAfterAnswer(key, .delivered))
        let repeated = try await withThrowingTaskGroup(of: RepeatGuard.Decision?.self) { group in
            group.addTask {
                await guardian.finish([finish], heard: true)
                return nil
            }
            #expect(await eventually { store.calls.withLock { $0 } == ["claim", "finish heard"] })
            group.addTask { await guardian.claim([RecordClaimRequest(key)], app: "com.example.app").first }
            // The repeat waits for the finish; it neither joins the delivery nor reaches the store.
            #expect(await eventually { guardian.finishesWaitedFor == 1 })
            #expect(store.calls.withLock { $0 } == ["claim", "finish heard"])
            store.release()
            var decision: RepeatGuard.Decision?
            for try await answer in group { if let answer { decision = answer } }
            return decision
        }
        guard case .send = repeated else {
            Issue.record("the repeat of a heard answer was not sent again: \(String(describing: repeated))")
            return
        }
        #expect(store.calls.withLock { $0 } == ["claim", "finish heard", "finished", "claim"])
        #expect(guardian.finishesWaitedFor == 0)
    }

    /// A repeat whose sender goes away while it waits for the finish (its task cancelled) is
    /// answered a local error at once, without claiming; the finish still lands, and the next
    /// repeat is sent again.
    @Test func aRepeatCancelledWhileItWaitsForTheFinishNeitherClaimsNorHoldsTheFinish() async throws {
        let (store, guardian, key) = Self.guarded()
        guard case .send = await guardian.claim([RecordClaimRequest(key)], app: "com.example.app").first else {
            Issue.record("the first claim is not sent")
            return
        }
        let finish = try #require(await guardian.settleAfterAnswer(key, .delivered))
        async let finished: Void = guardian.finish([finish], heard: true)
        #expect(await eventually { store.calls.withLock { $0 } == ["claim", "finish heard"] })
        let repeated = Task { await guardian.claim([RecordClaimRequest(key)], app: "com.example.app").first }
        #expect(await eventually { guardian.finishesWaitedFor == 1 })
        repeated.cancel()
        let cancelled = await repeated.value
        guard case .answered(.failed(reason: .localError)) = cancelled else {
            Issue.record("a cancelled repeat was answered \(String(describing: cancelled))")
            return
        }
        #expect(store.calls.withLock { $0 } == ["claim", "finish heard"])
        store.release()
        await finished
        #expect(store.calls.withLock { $0 } == ["claim", "finish heard", "finished"])
        guard case .send = await guardian.claim([RecordClaimRequest(key)], app: "com.example.app").first else {
            Issue.record("the repeat after the finish is not sent again")
            return
        }
        #expect(store.calls.withLock { $0 } == ["claim", "finish heard", "finished", "claim"])
    }
}

extension RepeatGuard {
    /// `finish`, waited for.
    func finish(_ finishes: [RecordFinish], heard: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            finish(finishes, heard: heard) { continuation.resume() }
        }
    }
}
