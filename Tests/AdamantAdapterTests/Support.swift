import Foundation
import Logging
import PostgresNIO

/// A database of its own on the test PostgreSQL.
enum TestDatabase {
    static func create(url: String, logger: Logger) async throws -> String {
        var components = try require(URLComponents(string: url))
        let name = "adamant_test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))"
        let client = PostgresClient(
            configuration: .init(
                host: components.host ?? "127.0.0.1", port: components.port ?? 5432, username: components.user ?? "postgres",
                password: components.password, database: "postgres", tls: .disable), backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
            group.cancelAll()
        }
        components.path = "/" + name
        return components.string ?? url
    }
}

func require<T>(_ value: T?) throws -> T {
    guard let value else { throw Missing() }
    return value
}

struct Missing: Error {}
