import Foundation
import Testing

/// Time comes from the injected clock, everywhere (docs/architecture.md, "Time"): no code of
/// Herald's reads the system's clocks or sleeps on its own, and no initialiser falls back to the
/// system clock when its caller forgot to pass one. A deadline kept on an event loop (the answer
/// deadline, the request read deadline, an upstream's `request_timeout`) reads its `LoopTimer`'s
/// clock, `timer.now(loop)`: the loop's own in Herald and on a test's embedded loop, a test's
/// manual clock when the gateway was given one (`LoopClock`); none defaults that clock. Only the clock type itself reads the system,
/// and only the composition root (Bootstrap.swift) and the process-wide log throttle choose the
/// system clock. The test support and the benchmark's helpers are not the product and may.
@Suite struct SourcesTimeGuardTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// Not the product: test support, fakes, the fuzzer's driver and the benchmark's bare server and floors.
    static let notProduct = ["HeraldTestSupport/", "herald-fakes/", "herald-fuzz/", "bench-hello/", "bench-floor/"]
    /// Where the system's clocks are read: the clock type.
    static let clockType = "HeraldCore/Support/HeraldClock.swift"
    /// Where the system clock is chosen.
    static let choosers: Set<String> = [clockType, "Gateway/Lifecycle/Bootstrap.swift", "HeraldCore/Support/LogThrottle.swift"]

    /// Each file of the product and what it breaks.
    static func violations(in files: [String: String]) -> [String] {
        var found: [String] = []
        for (path, text) in files.sorted(by: { $0.key < $1.key }) where !notProduct.contains(where: path.hasPrefix) {
            let code = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(
                separator: "\n")
            if path != clockType {
                for (pattern, what) in [
                    (#/Date\(\)/#, "reads the wall clock (`Date()`): use the injected clock's `date`"),
                    (#/ContinuousClock/#, "uses ContinuousClock: use the injected clock's `now` and `HeraldInstant`"),
                    (#/sleep\(/#, "sleeps: wait on the injected clock (`clock.wait`)"),
                    (
                        #/NIODeadline\.now\(\)/#,
                        "reads the system's uptime clock (`NIODeadline.now()`): use the event loop's (`eventLoop.now`)"
                    ),
                ] where code.contains(pattern) {
                    found.append("\(path) \(what)")
                }
            }
            if code.contains(#/clock: any HeraldClock = /#) { found.append("\(path) defaults a clock: take it without a default") }
            if code.contains(#/[cC]lock: any LoopClock = /#) {
                found.append("\(path) defaults a loop clock: take it from the caller (`HeraldClock.loopClock`)")
            }
            if code.contains("LoopTimerOwner"), code.contains(#/eventLoop\.now\b/#) {
                found.append("\(path) keeps a timer and reads the loop's own clock: read `timer.now(context.eventLoop)`")
            }
            if !choosers.contains(path) && code.contains(#/SystemClock\(\)/#) {
                found.append("\(path) chooses the system clock: take the clock from the caller")
            }
        }
        return found
    }

    static func productFiles() throws -> [String: String] {
        let walker = try #require(FileManager.default.enumerator(atPath: sources.path))
        var files: [String: String] = [:]
        for case let path as String in walker where path.hasSuffix(".swift") {
            files[path] = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
        }
        return files
    }

    @Test func theProductReadsTimeOnlyFromTheInjectedClock() throws {
        let files = try Self.productFiles()
        #expect(files.count > 100)
        let found = Self.violations(in: files)
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    /// The guard fails on each thing it forbids, added to a file of the product.
    @Test(arguments: [
        "let now = Date()", "let start = ContinuousClock.now", "try await Task.sleep(for: .seconds(1))",
        "init(clock: any HeraldClock = SystemClock()) {}", "let clock = SystemClock()",
        "let deadline = NIODeadline.now() + .seconds(5)", "init(clock: any LoopClock = EventLoopClock()) {}",
        "extension Owner: LoopTimerOwner { func due(context: ChannelHandlerContext) -> NIODeadline { context.eventLoop.now } }",
    ])
    func theGuardCatches(line: String) throws {
        var files = try Self.productFiles()
        let path = "Pushkins/APNs/APNsPushkin.swift"
        files[path] = (files[path] ?? "") + "\n" + line + "\n"
        #expect(!Self.violations(in: files).isEmpty)
    }
}
