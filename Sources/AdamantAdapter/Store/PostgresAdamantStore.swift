import Foundation
import HeraldPostgres
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle

/// The ADAMANT store for several Herald instances: PostgreSQL, the same tables, and a polling
/// lease (a session advisory lock held on one connection) so that one instance polls at a time and
/// another takes over within `retry` when it dies.
public final class PostgresAdamantStore: AdamantStore {
    private let client: PostgresClient
    private let logger: Logger
    public let url: String
    static let leaseKey: Int64 = 4_242_002
    static let migrationKey: Int64 = 4_242_003

    public struct URLError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(url: String, logger: Logger) throws {
        self.url = url
        self.logger = logger
        do {
            var configuration = try PostgresURL.configuration(url)
            configuration.options.maximumConnections = 8
            client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        } catch {
            throw URLError(description: error.description)
        }
    }

    public var services: [any Service] { [client] }

    public func migrate() async throws {
        _ = try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS adamant_devices (
                    address TEXT NOT NULL, token TEXT NOT NULL, provider TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (address, token))
                """, logger: logger)
            try await connection.query("CREATE INDEX IF NOT EXISTS adamant_devices_token ON adamant_devices (token)", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS adamant_cursors (worker TEXT PRIMARY KEY, height BIGINT NOT NULL, updated_at DOUBLE PRECISION NOT NULL)",
                logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS adamant_pushed (key TEXT PRIMARY KEY, seq BIGSERIAL)", logger: logger)
            try await connection.query("CREATE INDEX IF NOT EXISTS adamant_pushed_seq ON adamant_pushed (seq)", logger: logger)
        }
    }

    public func cursor(_ worker: String) async throws -> Int64? {
        let rows = try await client.query("SELECT height FROM adamant_cursors WHERE worker = \(worker)", logger: logger)
        for try await height in rows.decode(Int64.self) { return height }
        return nil
    }

    private static func setCursor(_ connection: PostgresConnection, _ worker: String, _ cursor: Int64, logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO adamant_cursors (worker, height, updated_at) VALUES (\(worker), \(cursor), \(Date().timeIntervalSince1970))
            ON CONFLICT (worker) DO UPDATE SET height = EXCLUDED.height, updated_at = EXCLUDED.updated_at
            """, logger: logger)
    }

    public func apply(_ changes: [DeviceChange], worker: String, cursor: Int64) async throws {
        let logger = self.logger
        _ = try await client.withTransaction(logger: logger) { connection in
            for change in changes {
                switch change.action {
                case .add(let provider):
                    try await connection.query(
                        """
                        INSERT INTO adamant_devices (address, token, provider, updated_at)
                        VALUES (\(change.address), \(change.token), \(provider.rawValue), \(Date().timeIntervalSince1970))
                        ON CONFLICT (address, token) DO UPDATE SET provider = EXCLUDED.provider, updated_at = EXCLUDED.updated_at
                        """, logger: logger)
                case .remove:
                    try await connection.query(
                        "DELETE FROM adamant_devices WHERE address = \(change.address) AND token = \(change.token)", logger: logger)
                }
            }
            try await Self.setCursor(connection, worker, cursor, logger: logger)
        }
    }

    public func devices(addresses: [String]) async throws -> [RegisteredDevice] {
        guard !addresses.isEmpty else { return [] }
        let rows = try await client.query(
            "SELECT address, token, provider FROM adamant_devices WHERE address = ANY(\(addresses)) ORDER BY address, token", logger: logger
        )
        var result: [RegisteredDevice] = []
        for try await (address, token, provider) in rows.decode((String, String, String).self) {
            guard let provider = AdamantProvider(rawValue: provider) else { continue }
            result.append(RegisteredDevice(address: address, token: token, provider: provider))
        }
        return result
    }

    public func remove(token: String, provider: AdamantProvider) async throws -> Int {
        let rows = try await client.query(
            "DELETE FROM adamant_devices WHERE token = \(token) AND provider = \(provider.rawValue) RETURNING address", logger: logger)
        var count = 0
        for try await _ in rows.decode(String.self) { count += 1 }
        return count
    }

    public func pushed(among keys: [String]) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let rows = try await client.query("SELECT key FROM adamant_pushed WHERE key = ANY(\(keys))", logger: logger)
        var found: Set<String> = []
        for try await key in rows.decode(String.self) { found.insert(key) }
        return found
    }

    public func commit(pushed keys: [String], worker: String, cursor: Int64, keep: Int) async throws {
        let logger = self.logger
        _ = try await client.withTransaction(logger: logger) { connection in
            if !keys.isEmpty {
                try await connection.query(
                    "INSERT INTO adamant_pushed (key) SELECT unnest(\(keys)::text[]) ON CONFLICT (key) DO NOTHING", logger: logger)
                try await connection.query(
                    "DELETE FROM adamant_pushed WHERE seq <= (SELECT COALESCE(MAX(seq), 0) FROM adamant_pushed) - \(Int64(keep))",
                    logger: logger)
            }
            try await Self.setCursor(connection, worker, cursor, logger: logger)
        }
    }

    /// Holds the advisory lock on one connection while `body` runs; a dead instance's connection
    /// closes and its lock with it.
    public func whileLeader(retry: Duration, _ body: @Sendable () async throws -> Void) async throws {
        let logger = self.logger
        while !Task.isCancelled {
            let ran: Bool = try await client.withConnection { connection in
                let rows = try await connection.query("SELECT pg_try_advisory_lock(\(Self.leaseKey))", logger: logger)
                var acquired = false
                for try await value in rows.decode(Bool.self) { acquired = value }
                guard acquired else { return false }
                logger.notice("ADAMANT polling lease taken")
                defer { logger.notice("ADAMANT polling lease released") }
                do {
                    try await body()
                } catch {
                    _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.leaseKey))", logger: logger)
                    throw error
                }
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.leaseKey))", logger: logger)
                return true
            }
            if ran { return }
            try await Task.sleep(for: retry)
        }
    }

    public func close() async {}
}
