package import Logging
import NIOHTTP1

/// `log.access.enabled`: one line per request, as web servers write them (method, path, status,
/// duration, bytes in and out, the request id), under the logger label `herald.access`.
package struct AccessLog: Sendable {
    let logger: Logger

    package init(logger: Logger = Logger(label: "herald.access")) {
        self.logger = logger
    }

    /// `repeats`: the response's `Herald-Repeats` (devices answered as repeats, not sent again).
    func record(_ request: ServerRequest, status: HTTPResponseStatus, responseBytes: Int, duration: Duration, repeats: String? = nil) {
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)", "path": "\(request.path)", "status": "\(status.code)",
            "duration_ms": "\(String(format: "%.3f", Double(duration.nanoseconds) / 1e6))",
            "request_bytes": "\(request.body.readableBytes)",
            "response_bytes": "\(responseBytes)", "request_id": "\(request.requestId)",
        ]
        if let repeats { metadata["repeats_not_sent"] = "\(repeats)" }
        logger.info("\(request.method.rawValue) \(request.path) \(status.code)", metadata: metadata)
    }
}
