import Foundation
import HeraldCore
import HeraldHTTPServer

/// `GET /health`: always 200 while the instance serves (a load balancer must not take every
/// instance out because their shared database is down: the Matrix API and the relay need none).
/// The body is empty while every dependency works; otherwise it names what fails, since when and
/// its latest error (docs/operations.md, "Health"):
///
///     {"failing": {"status_store": {"since": "2026-11-27T03:12:09.120Z", "error": "…"}}}
struct HealthReport: Sendable {
    let components: [ComponentHealth]

    func response() -> ServerResponse {
        var failing = JSONObject()
        for component in components {
            guard let problem = component.problem else { continue }
            failing[component.name] = .object([
                "since": .string(UTCTimestamp.string(for: problem.since) + "Z"), "error": .string(problem.error),
            ])
        }
        return failing.isEmpty ? .empty(.ok) : .json(.ok, .object(["failing": .object(failing)]))
    }
}
