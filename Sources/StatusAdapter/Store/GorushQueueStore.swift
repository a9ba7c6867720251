package import Foundation

/// A queued gorush notification: its id in the store and its JSON.
package struct QueuedGorushJob: Sendable, Equatable {
    package var id: Int64
    package var body: [UInt8]

    package init(id: Int64, body: [UInt8]) {
        self.id = id
        self.body = body
    }
}

/// gorush's queue, kept in the Status store so that nothing answered "ok" is lost: a job is
/// committed before the request is answered and deleted only once it has been sent. A worker
/// claims jobs until a deadline; a job whose worker died (SIGKILL, a crash) is claimed again once
/// its claim has run out, so a job is sent at least once.
package protocol GorushQueueStore: Sendable {
    /// Queues `bodies` in order, in one transaction; false, writing nothing, when the queue would
    /// then hold more than `maxJobs` jobs or `maxBytes` bytes.
    func enqueueGorush(_ bodies: [[UInt8]], maxJobs: Int, maxBytes: Int) async throws -> Bool

    /// Claims up to `limit` of the oldest jobs nobody holds a claim on, until `until`.
    func claimGorush(limit: Int, now: Date, until: Date) async throws -> [QueuedGorushJob]

    /// Deletes a job that has been sent.
    func completeGorush(id: Int64) async throws

    /// At start-up: frees the claims of workers that are gone. SQLite, used by one instance at a
    /// time, frees them all; PostgreSQL, shared by running instances, lets them run out.
    func recoverGorushClaims() async throws

    /// How many jobs and bytes are queued.
    func gorushQueueDepth() async throws -> (jobs: Int, bytes: Int)
}
