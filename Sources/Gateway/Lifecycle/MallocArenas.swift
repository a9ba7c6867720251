#if canImport(Glibc)
    import Glibc
#endif

/// glibc's allocator gives threads that allocate at the same moment arenas of their own, up to
/// eight per core, and each keeps its own free memory. Herald's threads (the event loops, Swift's
/// cooperative pool) all allocate on every request, so a loaded Herald spreads its heap over
/// several arenas. Two hold it as well, with less memory kept free: in `bench/run.sh` the peak RSS
/// of the Web Push, APNs and FCM rows is 0.6–0.9 MiB lower, CPU per request unchanged
/// (docs/operations.md, "Memory"). `MALLOC_ARENA_MAX` in the environment, glibc's own setting,
/// wins.
package enum MallocArenas {
    package static let defaultLimit: Int32 = 2

    /// The limit Herald sets, or nil when the environment already sets one.
    static func limit(environment: [String: String]) -> Int32? {
        environment["MALLOC_ARENA_MAX"] == nil ? defaultLimit : nil
    }

    /// Sets the limit for `herald serve`, before its threads start allocating.
    package static func apply(environment: [String: String]) {
        #if canImport(Glibc)
            guard let limit = limit(environment: environment), let mallopt else { return }
            _ = mallopt(arenaMax, limit)
        #endif
    }

    #if canImport(Glibc)
        /// glibc's `mallopt` and its `M_ARENA_MAX` (malloc.h), which Swift's Glibc module does not declare.
        private typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        private static let arenaMax: Int32 = -8
        private static var mallopt: Mallopt? {
            dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt").map { unsafeBitCast($0, to: Mallopt.self) }
        }
    #endif
}
