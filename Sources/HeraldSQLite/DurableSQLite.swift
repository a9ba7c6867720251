import Foundation
package import GRDB

/// Opens the SQLite file of a Herald store: WAL, a 10 s busy timeout, and `synchronous=FULL` on
/// the writer, so a committed write survives a crash of the machine, not only of the process.
///
/// GRDB's `DatabasePool` sets `synchronous=NORMAL` when it turns WAL on, after the configuration's
/// `prepareDatabase` has run, so FULL must be set on the open pool's writer (one connection, for
/// which the setting then holds).
///
/// Every connection keeps at most `cacheKiB` of pages in memory (SQLite's own default is 2 000 KiB
/// each, for a writer, up to five readers and the point-read connections). The pages of the file stay
/// in the kernel's page cache anyway, so a smaller cache costs a read from it, not from the disk
/// (docs/operations.md, "Memory").
package enum DurableSQLite {
    /// `sqlite_cache_kib`'s default.
    package static let defaultCacheKiB = 256

    package static func open(path: String, cacheKiB: Int = defaultCacheKiB) throws -> DatabasePool {
        try FileManager.default.createDirectory(
            at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)") }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        return pool
    }

    /// The writer's `synchronous` setting (2 is FULL).
    package static func synchronousSetting(of pool: DatabasePool) async throws -> Int {
        try await pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }
}

extension DurableSQLite {
    /// Closes `pool` on a queue of its own, off Swift's cooperative pool. `DatabasePool.close()`
    /// blocks its thread until every reader is back, and an asynchronous read gives its reader
    /// back only once its task has resumed on a thread of that pool: closes that held every one of
    /// its threads (a Status store and an ADAMANT store stopping at once, on two cores) waited for
    /// a read that could never resume.
    package static func close(_ pool: DatabasePool) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            closing.async {
                try? pool.close()
                done.resume()
            }
        }
    }

    /// Where pools are closed: a serial queue, whose thread may block.
    private static let closing = DispatchQueue(label: "herald.sqlite.close")
}
