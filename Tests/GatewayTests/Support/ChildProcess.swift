import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A process the tests start (the `herald` executable), through `posix_spawn`.
///
/// Foundation's `Process.run()` crashed the whole test run once (a bad read inside its own
/// set-up, while other suites were starting processes too); spawning directly has no such state.
/// The child gets /dev/null as standard input, the given files or descriptor as output, and no
/// other descriptor of the test process.
final class ChildProcess: Sendable {
    struct SpawnFailed: Error { let code: Int32 }

    let processIdentifier: Int32
    private let exitStatus = Mutex<Int32?>(nil)
    private let reapedAt = Mutex<ContinuousClock.Instant?>(nil)

    private init(pid: Int32) { processIdentifier = pid }

    /// Starts `path` with `arguments`; standard output and error are appended to the files
    /// named, or standard output goes to `outputDescriptor`.
    static func launch(
        _ path: String, _ arguments: [String], output: String = "/dev/null", error: String = "/dev/null",
        outputDescriptor: Int32? = nil
    ) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let outputDescriptor {
            posix_spawn_file_actions_adddup2(&actions, outputDescriptor, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
        posix_spawn_file_actions_addopen(&actions, 2, error, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard code == 0 else { throw SpawnFailed(code: code) }
        return ChildProcess(pid: pid)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let closeFrom: CloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: CloseFrom.self) }

    /// Sends `signal` and waits for the process to end; its exit code or signal.
    @discardableResult func stop(_ signal: Int32) async -> Int32 {
        kill(processIdentifier, signal)
        return await exit()
    }

    /// Sends `signal` and reaps the process once it ends, without waiting for it: for `defer`
    /// blocks, which cannot wait asynchronously.
    func stopInBackground(_ signal: Int32) {
        kill(processIdentifier, signal)
        Thread.detachNewThread { self.waitUntilExit() }
    }

    /// Waits for the process to end; its exit code or signal. The wait blocks a thread of its own
    /// (`offPool`).
    @discardableResult func exit() async -> Int32 {
        await offPool {
            self.waitUntilExit()
            return self.terminationStatus
        }
    }

    /// Waits for the process to end (once; later calls return at once), blocking the calling thread.
    private func waitUntilExit() {
        guard exitStatus.withLock({ $0 }) == nil else { return }
        var status: Int32 = 0
        var reaped: pid_t = -1
        repeat { reaped = waitpid(processIdentifier, &status, 0) } while reaped == -1 && errno == EINTR
        guard reaped == processIdentifier else { return }  // already reaped by another caller
        // The exit code, or the number of the signal that ended it (as Foundation's Process reports).
        let ended = status & 0x7F
        reapedAt.withLock { $0 = .now }
        exitStatus.withLock { $0 = ended == 0 ? (status >> 8) & 0xFF : ended }
    }

    /// Once it has ended: when the wait for it returned. A test's own clock may read later than
    /// this, by as long as the test waited for a thread of the busy cooperative pool.
    var endedAt: ContinuousClock.Instant? { reapedAt.withLock { $0 } }

    /// Once it has ended: the exit code, or the signal that ended the process.
    var terminationStatus: Int32 { exitStatus.withLock { $0 } ?? -1 }
}
