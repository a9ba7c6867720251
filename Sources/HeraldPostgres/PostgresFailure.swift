import PostgresNIO
import _ConnectionPoolModule

/// A PostgreSQL store's failure as a log line and `/health` say it. PostgresNIO describes every
/// `PSQLError` with one generic sentence (so that a query's values stay out of logs), which tells
/// an operator neither what failed nor what to change. This names the failure (the server's
/// SQLSTATE, or the client's code and the connection's error), quotes the server's message only
/// for the classes whose messages name objects and rights, never values (not a data error's,
/// which may quote one), and adds the fix where it is known. It never holds the query.
package struct PostgresFailure: Error, CustomStringConvertible, Sendable {
    /// The server's SQLSTATE, when the server refused.
    package let sqlState: String?
    package let description: String

    /// The pool has given up connecting for now (`isCircuitBroken`): the database is as good as
    /// silent, and its probe, on a connection of its own, says why.
    package let isUnreachable: Bool

    /// `error` described, when it is PostgresNIO's; nil for any other error.
    package init?(_ error: any Error) {
        if Self.isCircuitBroken(error) {
            sqlState = nil
            isUnreachable = true
            description =
                "PostgreSQL has accepted no connection for a minute or more: PostgresNIO's pool fails each operation at once; "
                + "once the store's probe is answered, a new pool takes its place"
            return
        }
        guard let error = error as? PSQLError else { return nil }
        isUnreachable = false
        guard let info = error.serverInfo, let state = info[.sqlState] else {
            sqlState = nil
            let cause = error.underlying.map { ": " + Self.clean(String(describing: $0)) } ?? ""
            description = "PostgreSQL: \(error.code)\(cause)"
            return
        }
        sqlState = state
        let quoted = Self.quotable.contains(String(state.prefix(2))) ? info[.message].map { ": " + Self.clean($0) } ?? "" : ""
        let fix = Self.fixes[state].map { "; " + $0 } ?? ""
        description = "PostgreSQL refused (SQLSTATE \(state)\(quoted))\(fix)"
    }

    /// Whether `error` is the pool's refusal to wait for a connection: after a minute in which no
    /// connection could be made and none is open, PostgresNIO's pool fails every lease at once
    /// until one of its attempts, backing off up to a minute apart, succeeds (`PostgresPool`
    /// renews it sooner).
    package static func isCircuitBroken(_ error: any Error) -> Bool {
        (error as? ConnectionPoolError) == .connectionCreationCircuitBreakerTripped
    }

    /// The SQLSTATE classes whose messages name a connection, a database, a role, an object or a
    /// limit: connection (08), feature (0A), transaction state (25), authorisation (28), catalog and
    /// schema names (3D, 3F), rollbacks (40), syntax and access rules (42), resources and limits
    /// (53, 54, 55), operator intervention (57), system (58).
    static let quotable: Set<String> = ["08", "0A", "25", "28", "3D", "3F", "40", "42", "53", "54", "55", "57", "58"]

    /// What to change, for the refusals an operator meets when setting a store up.
    static let fixes: [String: String] = [
        "42501":
            "grant the database user CREATE on its schema (GRANT CREATE ON SCHEMA public TO the user) and the right to write "
            + "its tables: Herald makes its tables, and the delivery record's functions, on first use "
            + "(docs/operations.md, \"The database's rights\")",
        "25006": "the URL reaches a standby or a read-only database: point it at the primary, or at a proxy that follows it",
        // Refusals of the connection itself, which a silent store's probe reports (the pool tries
        // again without saying why).
        "28P01": "the user name or password in the URL is refused",
        "28000": "PostgreSQL's pg_hba.conf does not let this user in from this address",
        "3D000": "the database the URL names does not exist: create it (Herald makes its tables, not the database)",
        "53300": "PostgreSQL's max_connections is reached: raise it, or lower the connections each instance keeps",
    ]

    /// `text` on one line, at most 200 characters, control characters escaped.
    static func clean(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(200) {
            if scalar.properties.generalCategory == .control {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
