import HeraldCore
import Synchronization

/// The gorush queue's depth as last read from the store, and what this instance queued since, so
/// that an insert far from the queue's limits needs no count of the queue (PostgreSQL).
///
/// An instance inserts without counting only while the depth it read plus what it added since stays
/// under nine tenths of the limits, and adds at most a tenth of them between two reads: the fleet
/// can pass a limit by at most a tenth of it per other instance, for at most a second.
final class GorushQueueDepth: Sendable {
    /// How long a read depth is trusted.
    static let freshFor: Duration = .seconds(1)

    private struct State {
        var jobs = 0
        var bytes = 0
        var readAt: HeraldInstant?
        var addedJobs = 0
        var addedBytes = 0
    }
    private let state = Mutex(State())

    enum Admission: Equatable {
        /// Far below both limits: insert without counting.
        case roomy
        /// At or past a limit: refuse without a query.
        case full
        /// Near a limit, or no fresh depth: count in the insert's statement.
        case count
    }

    /// The store's count at this moment.
    func read(jobs: Int, bytes: Int, at now: HeraldInstant) {
        state.withLock { $0 = State(jobs: jobs, bytes: bytes, readAt: now) }
    }

    /// Whether `jobs` of `bytes` may be inserted without a count; a `roomy` admission is added to
    /// the depth (other instances' inserts show at the next read).
    func admit(jobs: Int, bytes: Int, maxJobs: Int, maxBytes: Int, now: HeraldInstant) -> Admission {
        state.withLock { state in
            guard let readAt = state.readAt, now - readAt <= Self.freshFor else { return .count }
            if state.jobs >= maxJobs || state.bytes >= maxBytes { return .full }
            guard (state.jobs + jobs) * 10 <= maxJobs * 9, (state.bytes + bytes) * 10 <= maxBytes * 9,
                (state.addedJobs + jobs) * 10 <= maxJobs, (state.addedBytes + bytes) * 10 <= maxBytes
            else { return .count }
            state.jobs += jobs
            state.bytes += bytes
            state.addedJobs += jobs
            state.addedBytes += bytes
            return .roomy
        }
    }
}
