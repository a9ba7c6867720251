import Testing

@testable import StatusAdapter

/// When an insert into the gorush queue on PostgreSQL needs no count of the queue: with a depth read
/// within the last second, far below both limits, and at most a tenth of them added since the read.
@Suite struct GorushQueueDepthTests {
    let start = ContinuousClock.now

    @Test func withoutAFreshDepthEveryInsertCounts() {
        let depth = GorushQueueDepth()
        #expect(depth.admit(jobs: 1, bytes: 10, maxJobs: 100, maxBytes: 10_000, now: start) == .count)
        depth.read(jobs: 0, bytes: 0, at: start)
        #expect(depth.admit(jobs: 1, bytes: 10, maxJobs: 100, maxBytes: 10_000, now: start + .milliseconds(500)) == .roomy)
        #expect(depth.admit(jobs: 1, bytes: 10, maxJobs: 100, maxBytes: 10_000, now: start + .milliseconds(1001)) == .count)
    }

    @Test func aQueueReadFullIsRefusedAndOneNearItsLimitsCounted() {
        let depth = GorushQueueDepth()
        depth.read(jobs: 100, bytes: 0, at: start)
        #expect(depth.admit(jobs: 1, bytes: 1, maxJobs: 100, maxBytes: 10_000, now: start) == .full)
        depth.read(jobs: 0, bytes: 10_000, at: start)
        #expect(depth.admit(jobs: 1, bytes: 1, maxJobs: 100, maxBytes: 10_000, now: start) == .full)
        depth.read(jobs: 89, bytes: 0, at: start)
        #expect(depth.admit(jobs: 1, bytes: 1, maxJobs: 100, maxBytes: 10_000, now: start) == .roomy)  // 90 of 100
        #expect(depth.admit(jobs: 1, bytes: 1, maxJobs: 100, maxBytes: 10_000, now: start) == .count)  // 91: near the limit
        depth.read(jobs: 0, bytes: 8_999, at: start)
        #expect(depth.admit(jobs: 1, bytes: 2, maxJobs: 100, maxBytes: 10_000, now: start) == .count)  // bytes near theirs
    }

    @Test func betweenTwoReadsAnInstanceAddsAtMostATenthUncounted() {
        let depth = GorushQueueDepth()
        depth.read(jobs: 0, bytes: 0, at: start)
        for _ in 0..<10 { #expect(depth.admit(jobs: 1, bytes: 1, maxJobs: 100, maxBytes: 10_000, now: start) == .roomy) }
        #expect(depth.admit(jobs: 1, bytes: 1, maxJobs: 100, maxBytes: 10_000, now: start) == .count)
        depth.read(jobs: 10, bytes: 10, at: start + .milliseconds(900))
        #expect(depth.admit(jobs: 1, bytes: 1, maxJobs: 100, maxBytes: 10_000, now: start + .milliseconds(900)) == .roomy)
    }
}
