import Foundation
import NIOSSL
package import PostgresNIO

/// A `postgres://user:password@host:port/database?sslmode=…&sslrootcert=…` URL as a PostgresNIO
/// configuration, for every store that can live in PostgreSQL (docs/configuration.md):
///
/// - `sslmode=disable` (the default): no TLS;
/// - `require`: TLS, without checking the server's certificate (as libpq's `require`);
/// - `verify-full`: TLS, the certificate checked against `sslrootcert` (a PEM CA file) or the
///   system's roots, and the host name against the certificate.
package enum PostgresURL {
    package struct Invalid: Error, CustomStringConvertible {
        package var description: String
    }

    /// At most `maxConnections` connections (a store's `store_max_connections`).
    package static func configuration(_ url: String, maxConnections: Int = 16) throws(Invalid) -> PostgresClient.Configuration {
        client(try Parts(url), maxConnections: maxConnections)
    }

    /// A store's configurations, from one reading of its URL: its pool's (`configuration`) and one
    /// connection's outside the pool, for a silent store's probe (`PostgresDeadline.probe`), whose
    /// failure says why the pool cannot connect.
    package static func configurations(_ url: String, maxConnections: Int = 16) throws(Invalid) -> (
        client: PostgresClient.Configuration, connection: PostgresConnection.Configuration
    ) {
        let parts = try Parts(url)
        return (client(parts, maxConnections: maxConnections), try connection(parts, url: url))
    }

    private static func client(_ parts: Parts, maxConnections: Int) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: parts.host, port: parts.port, username: parts.username, password: parts.password, database: parts.database,
            tls: parts.tls.map { .require($0) } ?? .disable)
        configuration.options.maximumConnections = maxConnections
        return configuration
    }

    private static func connection(_ parts: Parts, url: String) throws(Invalid) -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        if let configuration = parts.tls {
            do {
                tls = .require(try NIOSSLContext(configuration: configuration))
            } catch {
                throw Invalid(description: "TLS for '\(redacted(url))' cannot be set up: \(error)")
            }
        } else {
            tls = .disable
        }
        return PostgresConnection.Configuration(
            host: parts.host, port: parts.port, username: parts.username, password: parts.password, database: parts.database, tls: tls)
    }

    /// What a URL names.
    private struct Parts {
        let host: String
        let port: Int
        let username: String
        let password: String?
        let database: String?
        /// nil: no TLS.
        let tls: TLSConfiguration?

        init(_ url: String) throws(Invalid) {
            guard let components = URLComponents(string: url), let host = components.host,
                components.scheme == "postgres" || components.scheme == "postgresql"
            else { throw Invalid(description: "'\(redacted(url))' is not a postgres:// URL") }
            let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
            var query: [String: String] = [:]
            for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
            switch query["sslmode"] ?? "disable" {
            case "disable":
                tls = nil
            case "require":
                var configuration = TLSConfiguration.makeClientConfiguration()
                configuration.certificateVerification = .none
                tls = configuration
            case "verify-full":
                var configuration = TLSConfiguration.makeClientConfiguration()
                configuration.certificateVerification = .fullVerification
                if let ca = query["sslrootcert"], !ca.isEmpty {
                    guard FileManager.default.isReadableFile(atPath: ca) else {
                        throw Invalid(description: "sslrootcert '\(ca)' cannot be read")
                    }
                    configuration.trustRoots = .file(ca)
                }
                tls = configuration
            case let other:
                throw Invalid(description: "sslmode must be disable, require or verify-full, got '\(other)'")
            }
            self.host = host
            port = components.port ?? 5432
            username = components.user ?? "postgres"
            password = components.password
            self.database = database.isEmpty ? nil : database
        }
    }

    /// The URL without its password, for messages.
    package static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }
}
