import Foundation
import Testing

/// Tests wait on events (a fake's record, a metric, a "poll now" hook) through `eventually` and
/// `TestEvent` in HeraldTestSupport, never on a pause of a guessed length: a pause is either too
/// short on a loaded machine (the test fails) or too long everywhere. Test support (Sources/
/// HeraldTestSupport, Tests/*/Support) may sleep; a test file may not, except those listed here
/// with what they still wait for. The list only shrinks: a file that sleeps less than its
/// allowance must lower it, and a file not listed may not sleep at all.
@Suite struct TestSleepGuardTests {
    /// Sleeps still to replace by an injected clock (docs/architecture.md, "Time"), with what each
    /// waits for: the time a deadline of the server or the upstream client needs to pass, or the
    /// chaos test's schedule of load and faults.
    static let allowance: [String: Int] = [
        // The chaos test's schedule: a request every few ms, a kill every 4 s, a 6 s outage.
        "GatewayTests/FleetChaosTests.swift": 9,
        // The server's read deadline: time must pass on the connection.
        "GatewayTests/HardeningTests.swift": 1,
        // The HTTP/2 client's per-request timeout counted from the request, not the connection.
        "GatewayTests/APNsEndToEndTests.swift": 1,
        // A descriptor-starved server must stay idle over a window of CPU time.
        "GatewayTests/OperatorBinaryTests.swift": 2,
        // A handler that takes a while, and a client that does not read for a while.
        "GatewayTests/HTTPServerTests.swift": 2,
        // The HTTP/1 client's per-request timeout counted from the request.
        "PushkinsTests/UpstreamTransportTests.swift": 1,
        // "Nothing more happens": a writer that must not take a fourth answer, a shutdown mid-write.
        "StatusAdapterTests/ResponseCacheTests.swift": 2,
        // Work that overlaps so that the peak of concurrent dispatches can be measured.
        "PushkinsTests/DispatchAdmissionTests.swift": 1,
    ]

    static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    @Test func testsSleepOnlyWhereListed() throws {
        let walker = try #require(FileManager.default.enumerator(atPath: Self.tests.path))
        var found: [String: Int] = [:]
        for case let path as String in walker where path.hasSuffix(".swift") && !path.contains("/Support/") {
            guard path != "GatewayTests/TestSleepGuardTests.swift" else { continue }
            let text = try String(contentsOf: Self.tests.appendingPathComponent(path), encoding: .utf8)
            let sleeps = text.matches(of: #/sleep\(/#).count  // Task.sleep(, Thread.sleep(, usleep(
            if sleeps > 0 { found[path] = sleeps }
        }
        for (path, count) in found.sorted(by: { $0.key < $1.key }) {
            let allowed = Self.allowance[path] ?? 0
            #expect(count <= allowed, "\(path) sleeps \(count) times (allowed \(allowed)): wait on an event with `eventually`")
        }
        for (path, allowed) in Self.allowance where (found[path] ?? 0) < allowed {
            Issue.record("\(path) now sleeps \(found[path] ?? 0) times: lower its allowance from \(allowed)")
        }
    }
}
