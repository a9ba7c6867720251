import Foundation
import Testing

/// Tests wait on events (a fake's record, a metric, a "poll now" hook) through `eventually` and
/// `TestEvent`, or on a `ManualClock` that moves when told, never on a pause of a guessed length:
/// a pause is either too short on a loaded machine (the test fails) or too long everywhere. Test
/// support (Sources/HeraldTestSupport, Tests/*/Support) may sleep; a test file may not. Only the
/// files listed here let real time pass, through `letRealTimePass`, because their subject measures
/// real time itself; the list only shrinks.
@Suite struct TestSleepGuardTests {
    /// The tests that let real time pass (`letRealTimePass`), because what they test measures
    /// real time itself (docs/architecture.md, "Time"), and how often. An allowance may only shrink.
    static let realTime: [String: Int] = [
        // The chaos test's schedule: a request every few ms, a kill every 4 s, a 6 s outage.
        "GatewayTests/FleetChaosTests.swift": 9,
        // A descriptor-starved server must stay idle over a window of CPU time.
        "GatewayTests/OperatorBinaryTests.swift": 2,
        // A handler that takes a while, and a client that does not read for a while.
        "GatewayTests/HTTPServerTests.swift": 2,
    ]

    /// Where a test may subtract instants of the wall clock: the chaos test's schedule (when to
    /// kill, how long an outage lasted, for its report), not an assertion.
    static let elapsedAllowed: Set<String> = ["GatewayTests/FleetChaosTests.swift"]

    static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    @Test func testsNeverSleepAndLetRealTimePassOnlyWhereListed() throws {
        let walker = try #require(FileManager.default.enumerator(atPath: Self.tests.path))
        var found: [String: Int] = [:]
        for case let path as String in walker where path.hasSuffix(".swift") && !path.contains("/Support/") {
            // The guards name what they forbid.
            guard path != "GatewayTests/TestSleepGuardTests.swift", path != "GatewayTests/SourcesTimeGuardTests.swift" else { continue }
            let text = try String(contentsOf: Self.tests.appendingPathComponent(path), encoding: .utf8)
            let sleeps = text.matches(of: #/sleep\(/#).count  // Task.sleep(, Thread.sleep(, usleep(
            #expect(sleeps == 0, "\(path) sleeps \(sleeps) times: wait on an event with `eventually`, or on a manual clock")
            // A bound on elapsed wall-clock time fails on a loaded machine and passes a slow bug: a
            // test asserts the event (the answer, the fake's record, the log line), and a transport's
            // deadline is driven on an embedded event loop's time.
            if !Self.elapsedAllowed.contains(path) {
                let elapsed = text.matches(of: #/ContinuousClock\.now\s*-|endedAt\)?\s*-/#).count
                #expect(elapsed == 0, "\(path) measures elapsed wall-clock time \(elapsed) times: assert the event instead")
            }
            let waits = text.matches(of: #/letRealTimePass\(/#).count
            if waits > 0 { found[path] = waits }
        }
        for (path, count) in found.sorted(by: { $0.key < $1.key }) {
            let allowed = Self.realTime[path] ?? 0
            #expect(count <= allowed, "\(path) lets real time pass \(count) times (allowed \(allowed)): wait on an event or a manual clock")
        }
        for (path, allowed) in Self.realTime where (found[path] ?? 0) < allowed {
            Issue.record("\(path) now lets real time pass \(found[path] ?? 0) times: lower its allowance from \(allowed)")
        }
    }
}
