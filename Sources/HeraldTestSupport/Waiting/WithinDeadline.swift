import HeraldCore

/// Runs `work` for at most `limit` of real time: past it the work is cancelled and
/// `Deadline.Exceeded` thrown. For a test whose subject may hang (a connection pool retrying a
/// handshake it can never finish); the product keeps its deadlines on the injected clock.
package func withinDeadline<T: Sendable>(_ limit: Duration, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await work() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw Deadline.Exceeded(after: limit) }
        return value
    }
}
