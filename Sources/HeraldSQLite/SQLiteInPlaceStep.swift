package import GRDB
import GRDBSQLite

/// A prepared statement run once with its parameters bound straight from the caller's values:
/// no `StatementArguments`, no `Data` per blob. GRDB's `execute(arguments:)` allocated for each
/// argument of an insert, for the response cache's insert of every Status push request
/// (docs/operations.md, "The hot path as values"). The connection's hooks (GRDB's transaction
/// observation) see the change as they see any other.
extension Statement {
    /// Binds `bind`'s values by position, steps the statement to its end, and resets it. Call it
    /// where the statement's database is in use (inside GRDB's `write`).
    package func stepInPlace(in db: Database, _ bind: (inout SQLiteParameters) -> Void) throws {
        var parameters = SQLiteParameters(statement: sqliteStatement)
        bind(&parameters)
        defer {
            sqlite3_reset(sqliteStatement)
            sqlite3_clear_bindings(sqliteStatement)
        }
        // A value that could not be bound (too big, no such parameter) fails the statement unrun.
        let code = parameters.failure ?? sqlite3_step(sqliteStatement)
        guard code == SQLITE_DONE else {
            let message = db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
    }
}

/// A statement's parameters, bound in order from the first.
package struct SQLiteParameters {
    fileprivate let statement: OpaquePointer
    private var next: Int32 = 1
    /// The first bind's error code, if one failed.
    fileprivate private(set) var failure: Int32?

    fileprivate init(statement: OpaquePointer) { self.statement = statement }

    /// Bytes, copied by SQLite for the statement (as GRDB binds a `Data`).
    package mutating func blob(_ bytes: [UInt8]) {
        bound(bytes.withUnsafeBytes { sqlite3_bind_blob(statement, next, $0.baseAddress, Int32($0.count), Self.transient) })
    }

    package mutating func real(_ value: Double) {
        bound(sqlite3_bind_double(statement, next, value))
    }

    private mutating func bound(_ code: Int32) {
        if code != SQLITE_OK, failure == nil { failure = code }
        next += 1
    }

    /// SQLite's `SQLITE_TRANSIENT`: the value is copied before the bind returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
