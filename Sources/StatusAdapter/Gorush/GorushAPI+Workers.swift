import Foundation
import HeraldCore
import Metrics
import ServiceLifecycle

extension GorushAPI {
    /// How often the dispatcher looks at the queue without being woken: jobs queued by another
    /// instance (PostgreSQL), and claims that ran out.
    static let pollInterval: Duration = .seconds(1)

    /// Claims queued jobs in batches, holding at most twice `workers` (those being sent and as many
    /// ready for the next free worker), and hands them to `workers` tasks, until graceful shutdown;
    /// then the workers finish what they hold and the rest stays queued in the store.
    package func run() async {
        let store: any GorushQueueStore
        do {
            store = try await cancelWhenGracefulShutdown { try await self.queueStore() }
        } catch {
            if !(error is CancellationError) { logger.error("gorush workers have no queue", metadata: ["error": "\(error)"]) }
            await feedbackClient?.shutdown()
            return
        }
        do {
            try await store.recoverGorushClaims()
        } catch {
            logger.error("gorush queue claims could not be freed", metadata: ["error": "\(error)"])
        }
        let held = AtomicCounter()
        var depth = QueueDepthGauges(factory: metrics, clock: clock)
        let (jobs, handOut) = AsyncStream.makeStream(of: QueuedGorushJob.self)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<config.workers {
                group.addTask {
                    for await job in jobs {
                        await self.process(job, store: store)
                        held.add(-1)
                        self.bell.ring()
                    }
                }
            }
            await withGracefulShutdownHandler {
                // Cancelled (the shutdown's grace period ended before this service's turn): stop too.
                while !Task.isShuttingDownGracefully && !Task.isCancelled {
                    await depth.refresh(from: store)
                    // Claims a batch at a time, a worker's count ahead of the workers: one claim
                    // per job made the claims' round trips the bound of delivery (bench/fleet.sh).
                    let room = 2 * config.workers - held.current
                    if room >= config.workers, let claimed = await claim(room, from: store), !claimed.isEmpty {
                        held.add(claimed.count)
                        for job in claimed { handOut.yield(job) }
                        continue
                    }
                    await bell.wait(upTo: Self.pollInterval)
                }
            } onGracefulShutdown: {
                self.bell.ring()
            }
            handOut.finish()
        }
        await feedbackClient?.shutdown()
    }

    private func claim(_ limit: Int, from store: any GorushQueueStore) async -> [QueuedGorushJob]? {
        let now = clock.date
        do {
            return try await store.claimGorush(limit: limit, now: now, until: now + config.claimTimeout.seconds)
        } catch {
            if let suppressed = LogThrottle.perDevice.admit("gorush queue claim failed") {
                logger.error(
                    "gorush queue could not be read", metadata: ["error": "\(error)", "similar_lines_suppressed": "\(suppressed)"])
            }
            return nil
        }
    }

    /// Sends one queued notification, then deletes it from the queue.
    func process(_ job: QueuedGorushJob, store: any GorushQueueStore) async {
        stats.withLock { $0.busyWorkers += 1 }
        var heldElsewhere = false
        // The queue keeps JSON: a job is parsed and typed here, once, before it is sent.
        if case .object(let object)? = try? JSONParser.parse(job.body), let notification = try? GorushNotification(object) {
            // One token at a time: `workers` bounds the pushes in flight, as in gorush.
            let sent = await send([notification], limit: 1)
            // Written before the job counts as sent: a queued job has no answer to wait for.
            await sent.dispatched?.answered(heard: false).wait()
            heldElsewhere = sent.heldElsewhere
        } else {
            logger.error("gorush queue held a job that is not a notification; dropped", metadata: ["job": "\(job.id)"])
        }
        stats.withLock { $0.busyWorkers -= 1 }
        if Task.isCancelled {
            // Cut short by the shutdown's cancellation, its push may not have been sent: it stays
            // queued and is sent again when its claim runs out (at least once, never lost).
            logger.notice("gorush job left queued at shutdown", metadata: ["job": "\(job.id)"])
            return
        }
        if heldElsewhere {
            // A push of it is claimed by another instance that has not finished it (a worker
            // killed mid-send): the job stays queued and is processed again when its claim runs
            // out, by when that push is recorded, or its claim taken over and it is sent.
            logger.notice("gorush job left queued: another instance holds one of its pushes", metadata: ["job": "\(job.id)"])
            return
        }
        do {
            try await store.completeGorush(id: job.id)
        } catch {
            // It is sent again once its claim runs out: at least once, never lost
            // (docs/operations.md, "When a push can arrive twice").
            counters.increment(MetricName.gorushJobsSentAgain, [])
            logger.error("gorush job sent but not removed from the queue", metadata: ["job": "\(job.id)", "error": "\(error)"])
        }
    }
}

/// `herald_gorush_queue_jobs` and `herald_gorush_queue_bytes`: what the queue holds (across every
/// instance sharing the store), read at most once a second.
struct QueueDepthGauges {
    let jobs: Gauge
    let bytes: Gauge
    let clock: any HeraldClock
    private var next: HeraldInstant

    init(factory: any MetricsFactory, clock: any HeraldClock) {
        self.clock = clock
        next = clock.now
        jobs = Gauge(label: MetricName.gorushQueueJobs, factory: factory)
        bytes = Gauge(label: MetricName.gorushQueueBytes, factory: factory)
    }

    mutating func refresh(from store: any GorushQueueStore) async {
        guard clock.now >= next, let depth = try? await store.gorushQueueDepth() else { return }
        next = clock.now + .seconds(1)
        jobs.record(depth.jobs)
        bytes.record(depth.bytes)
    }
}
