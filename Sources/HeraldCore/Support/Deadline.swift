/// Runs work under a total deadline: past it the work is cancelled and `Deadline.Exceeded` thrown.
package enum Deadline {
    package struct Exceeded: Error, CustomStringConvertible, Sendable {
        package let after: Duration
        package init(after: Duration) { self.after = after }
        package var description: String { "no complete answer within \(after)" }
    }

    package static func run<T: Sendable>(within limit: Duration, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw Exceeded(after: limit) }
            return value
        }
    }
}
