import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldUpstream

/// `GET /health`: always 200 while the instance serves (a load balancer must not take every
/// instance out because their shared database is down: the Matrix API and the relay need none).
/// The body is empty while every dependency works; otherwise it names what fails, since when and
/// its latest error (docs/operations.md, "Health"):
///
///     {"failing": {"status_store": {"since": "2026-11-27T03:12:09.120Z", "error": "…"}}}
///
/// An upstream that asked for a pause is named under `held` while its hold lasts (docs/operations.md,
/// "Pushback"): not a failure of this instance, so still 200.
///
///     {"held": [{"pushkin": "com.example.fcm", "origin_class": "fcm", "until": "2026-11-27T03:14:09.120Z"}]}
struct HealthReport: Sendable {
    let components: [ComponentHealth]
    var holds: UpstreamHolds?

    func response() -> ServerResponse {
        var report = JSONObject()
        var failing = JSONObject()
        for component in components {
            guard let problem = component.problem else { continue }
            failing[component.name] = .object([
                "since": .string(UTCTimestamp.string(for: problem.since) + "Z"), "error": .string(problem.error),
            ])
        }
        if !failing.isEmpty { report["failing"] = .object(failing) }
        if let held = holds?.current, !held.isEmpty {
            report["held"] = .array(
                held.map {
                    [
                        "pushkin": .string($0.pushkin), "origin_class": .string($0.originClass),
                        "until": .string(UTCTimestamp.string(for: $0.until) + "Z"),
                    ]
                })
        }
        return report.isEmpty ? .empty(.ok) : .json(.ok, .object(report))
    }
}
