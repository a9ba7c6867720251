import Foundation

/// `process_*` metrics as prometheus_client exports them (Sygnal's Grafana dashboard uses them),
/// read from /proc at scrape time.
enum ProcessMetrics {
    /// When the process started, as prometheus_client reads it: the boot time (`btime` of
    /// /proc/stat) plus the process's start in clock ticks since boot (field 22 of /proc/self/stat).
    /// It is the kernel's record, not a clock this process reads.
    static let startTime: Double? = {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")"),
            let system = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let boot = system.split(separator: "\n").first(where: { $0.hasPrefix("btime ") })?.split(separator: " ").last.flatMap({
                Double($0)
            })
        else { return nil }
        // After the command: state is field 3, so starttime (field 22) is the 20th after it.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
        return boot + ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }()

    static func emit(into buffer: inout [UInt8]) {
        var lines: [String] = []
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let residentPages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        {
            let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
            lines.append("# TYPE process_resident_memory_bytes gauge")
            lines.append("process_resident_memory_bytes \(residentPages * pageSize)")
        }
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command: state(0) … utime(11) stime(12) in clock ticks.
            if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
                let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
                lines.append("# TYPE process_cpu_seconds_total counter")
                lines.append("process_cpu_seconds_total \((user + system) / ticks)")
            }
        }
        if let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            lines.append("# TYPE process_open_fds gauge")
            lines.append("process_open_fds \(fds.count)")
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            lines.append("# TYPE process_max_fds gauge")
            lines.append("process_max_fds \(limit.rlim_cur)")
        }
        if let startTime {
            lines.append("# TYPE process_start_time_seconds gauge")
            lines.append("process_start_time_seconds \(startTime)")
        }
        buffer.append(contentsOf: (lines.joined(separator: "\n") + "\n").utf8)
    }
}
