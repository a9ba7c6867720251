import FoundationEssentials
import Glibc

/// Who this process is where several instances share a database: its host and process id, as
/// the delivery trace and the ADAMANT lease's `holder` show it.
package enum InstanceName {
    package static let current: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&buffer, buffer.count - 1) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        return "\(host):\(getpid())"
    }()
}
