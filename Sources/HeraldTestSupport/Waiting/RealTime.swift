/// Lets `duration` of real time pass, for the few tests whose subject measures real time itself
/// and cannot take a manual clock (docs/architecture.md, "Time"): deadlines kept by SwiftNIO's
/// timers on real sockets (the server's read deadline, the upstream clients' request timeouts), a
/// server process's CPU use over a window, a client that stays silent while the server's buffers
/// fill, and the chaos test's schedule of load and faults. Each asserts a bound a loaded machine
/// cannot break (a deadline not reached early, a server that stays idle). `TestSleepGuardTests`
/// lists the files that call it and how often; every other wait is on an event or a manual clock.
package func letRealTimePass(_ duration: Duration) async throws {
    try await Task.sleep(for: duration)
}
