import Foundation
import Logging
import PostgresNIO

/// The throwaway PostgreSQL the test script starts (`HERALD_TEST_POSTGRES_URL`), and databases of
/// their own on it for tests.
package enum TestPostgres {
    package static let url = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// The URL of a database the server does not have (`herald_never_created`), for the tests of a
    /// refused connection; nil without a server.
    package static var missingDatabase: String? {
        guard let url, var components = URLComponents(string: url) else { return nil }
        components.path = "/herald_never_created"
        return components.string
    }

    /// Creates a new database and returns its URL.
    package static func createDatabase(prefix: String = "herald_test") async throws -> String {
        guard let url, var components = URLComponents(string: url) else { throw Unavailable() }
        var logger = Logger(label: "test-postgres")
        logger.logLevel = .critical
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))"
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

    package struct Unavailable: Error {}
}
