import GRDBSQLite
import Synchronization

/// Point lookups on a store's SQLite file (a registration by its key, an answer by its id), made on
/// the calling thread with read connections of their own and statements prepared once.
///
/// A lookup through GRDB's `DatabasePool` also takes a reader from the pool on a dispatch queue and
/// checks the schema version with a statement of its own (a second read transaction, with its file
/// locks); for a lookup of one row that was more than the lookup. Here a connection is taken from a
/// list under a lock and used by one thread at a time; SQLite re-prepares a statement by itself if
/// the schema changes. The writes, and every other read, stay with GRDB.
package final class SQLitePointReads: Sendable {
    /// A value bound to a statement's parameter.
    package enum Value: Sendable {
        case blob([UInt8])
        case text(String)
        case integer(Int64)
        case real(Double)
    }

    /// A row being read: its columns, by position. Valid only within the `read` it is given to.
    package struct Row {
        fileprivate let statement: OpaquePointer

        package func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

        /// The column's bytes, or nil if it is NULL.
        package func blob(_ column: Int32) -> [UInt8]? {
            guard sqlite3_column_type(statement, column) != SQLITE_NULL else { return nil }
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: bytes, count: count))
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package let code: Int32
        package let message: String
        package var description: String { "SQLite error \(code): \(message)" }
    }

    /// One read connection and its prepared statements. Only the thread that took it from `idle`
    /// uses it, until it gives it back.
    private final class Connection: @unchecked Sendable {
        let handle: OpaquePointer
        var statements: [String: OpaquePointer] = [:]

        init(path: String, cacheKiB: Int) throws(Failure) {
            var handle: OpaquePointer?
            let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
            guard code == SQLITE_OK, let handle else {
                let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
                sqlite3_close_v2(handle)
                throw Failure(code: code, message: message)
            }
            self.handle = handle
            sqlite3_busy_timeout(handle, 10_000)
            sqlite3_exec(handle, "PRAGMA cache_size = -\(cacheKiB)", nil, nil, nil)
        }

        func statement(_ sql: String) throws(Failure) -> OpaquePointer {
            if let statement = statements[sql] { return statement }
            var statement: OpaquePointer?
            let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
            guard code == SQLITE_OK, let statement else { throw failure(code) }
            statements[sql] = statement
            return statement
        }

        func failure(_ code: Int32) -> Failure { Failure(code: code, message: String(cString: sqlite3_errmsg(handle))) }

        deinit {
            for statement in statements.values { sqlite3_finalize(statement) }
            sqlite3_close_v2(handle)
        }
    }

    private let path: String
    private struct Idle {
        var connections: [Connection] = []
        var closed = false
    }
    private let idle = Mutex(Idle())
    /// Connections kept for the next lookups; one per thread that looks up at once is enough.
    private let maxIdle: Int
    /// Each connection's page cache (`DurableSQLite`).
    private let cacheKiB: Int

    /// Lookups on the SQLite file at `path`, which a `DurableSQLite` pool has opened (and put in WAL).
    package init(path: String, maxIdle: Int = 8, cacheKiB: Int = DurableSQLite.defaultCacheKiB) {
        self.path = path
        self.maxIdle = maxIdle
        self.cacheKiB = cacheKiB
    }

    /// Runs `sql` with `arguments` and reads its first row with `read`; nil if there is none.
    package func first<T>(_ sql: String, _ arguments: [Value], read: (Row) -> T) throws(Failure) -> T? {
        let connection = try take()
        defer { giveBack(connection) }
        let statement = try connection.statement(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, argument) in arguments.enumerated() {
            let position = Int32(index + 1)
            let code: Int32
            switch argument {
            case .blob(let bytes):
                code = bytes.withUnsafeBytes {
                    sqlite3_bind_blob(statement, position, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), transient)
                }
            case .text(let text):
                code = sqlite3_bind_text(statement, position, text, -1, transient)
            case .integer(let value):
                code = sqlite3_bind_int64(statement, position, value)
            case .real(let value):
                code = sqlite3_bind_double(statement, position, value)
            }
            guard code == SQLITE_OK else { throw connection.failure(code) }
        }
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return read(Row(statement: statement))
        case SQLITE_DONE: return nil
        case let code: throw connection.failure(code)
        }
    }

    private func take() throws(Failure) -> Connection {
        if let connection = idle.withLock({ $0.connections.popLast() }) { return connection }
        return try Connection(path: path, cacheKiB: cacheKiB)
    }

    private func giveBack(_ connection: Connection) {
        idle.withLock { idle in
            if !idle.closed && idle.connections.count < maxIdle { idle.connections.append(connection) }
        }
    }

    /// Closes the idle connections (the store is closing).
    package func close() {
        idle.withLock { $0 = Idle(closed: true) }
    }
}

/// SQLite copies the bound bytes (SQLITE_TRANSIENT).
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
