import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL server of a test's own (`scripts/postgres.sh`), which the test may crash (SIGKILL
/// of the postmaster, as a machine or OOM-killer would) and start again on the same port. Needs
/// root and Debian's server binaries, as the test script has.
package final class ThrowawayPostgres: Sendable {
    package let url: String
    package let directory: String

    package struct Failed: Error, CustomStringConvertible {
        package var description: String
    }

    /// The repository's `scripts/postgres.sh`.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/postgres.sh").path

    /// Whether this machine can run one (root, the script, the server binaries).
    package static var available: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: script)
            && ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.isEmpty == false)
    }

    private init(url: String, directory: String) {
        self.url = url
        self.directory = directory
    }

    package static func start() throws -> ThrowawayPostgres {
        let output = try run([script])
        let parts = output.split(separator: " ").map(String.init)
        guard parts.count == 2 else { throw Failed(description: "postgres.sh printed \(output)") }
        return ThrowawayPostgres(url: parts[0], directory: parts[1])
    }

    /// SIGKILL to the postmaster and every process it started, as a machine or the OOM killer
    /// would: every connection ends without a goodbye, the lock table with them, and no backend
    /// answers a query any more (a backend whose postmaster died alone could).
    package func crash() throws { try signalAll(SIGKILL) }

    /// SIGSTOP to the postmaster and every process it started, as a hung machine or a network
    /// partition would look: connections stay open, nothing is answered, no error comes. `thaw()`
    /// (or `stop()`) ends it.
    package func freeze() throws { try signalAll(SIGSTOP) }

    /// SIGCONT after `freeze()`: the server answers again what it was sent.
    package func thaw() throws { try signalAll(SIGCONT) }

    private func signalAll(_ signal: Int32) throws {
        let pidFile = try String(contentsOfFile: "\(directory)/data/postmaster.pid", encoding: .utf8)
        guard let pid = pidFile.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw Failed(description: "no postmaster pid")
        }
        // The postmaster first: stopped, it forks no backend that a list made before would miss
        // (a pool opening a connection at that moment once left one answering a "frozen" server).
        kill(pid, signal)
        for child in Self.children(of: pid) { kill(child, signal) }
    }

    /// The processes whose parent is `pid`, from /proc.
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard let child = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // After "pid (comm) state ppid": the fourth field, counted after the command's closing parenthesis.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid ? child : nil
        }
    }

    /// Starts it again on the same port and data (after `crash()`, once its backends have ended).
    package func restart() throws { _ = try Self.run([Self.script, "start", directory]) }

    package func stop() {
        try? thaw()
        _ = try? Self.run([Self.script, "stop", directory])
    }

    /// Runs the script, its output going to a file: the server it starts lives on and could hold a
    /// pipe open, so the output is read once the script has exited. Spawned and reaped directly
    /// (Foundation's `Process` waits on a run loop that an async test does not run).
    @discardableResult
    /// Whether some session holds an advisory lock (`granted`), or waits for one another holds
    /// (`granted: false`, a migration waiting for its lock): what a test waits on before it acts.
    package func advisoryLock(granted: Bool) throws -> Bool {
        let count = try Self.run([
            "-c", "psql \"$1\" -tAc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted = $2\"", "bash", url,
            granted ? "true" : "false",
        ])
        return (Int(count) ?? 0) > 0
    }

    static func run(_ arguments: [String]) throws -> String {
        let output = ScratchDirectory.make("postgres-script") + "/out"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = (["/bin/bash"] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/bash", &actions, nil, argv, environ) == 0 else { throw Failed(description: "cannot spawn bash") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else { throw Failed(description: "\(arguments.joined(separator: " ")) failed (\(status)): \(text)") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
