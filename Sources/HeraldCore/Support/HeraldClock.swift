package import FoundationEssentials

/// Time as a dependency (docs/architecture.md, "Time"): what waits or reads the time (retries,
/// the ADAMANT pollers, the Status response cache, rate limiters, log throttles) takes a clock.
/// Herald runs on `SystemClock`; tests give a manual clock that moves only when told, so that no
/// test waits for time to pass.
package protocol HeraldClock: Clock, Sendable where Instant == ContinuousClock.Instant {
    /// The wall-clock time (expiries, `Retry-After` dates, tokens' issue times), which moves with
    /// `now`.
    var date: Date { get }
    /// What the deadlines kept on event loops run on (`LoopClock`): the loops' own clock, unless
    /// this clock is a test's, which moves them too.
    var loopClock: any LoopClock { get }
}

/// An instant of a `HeraldClock`: monotonic time, as the system's continuous clock counts it.
package typealias HeraldInstant = ContinuousClock.Instant

extension HeraldClock {
    package var loopClock: any LoopClock { EventLoopClock() }

    /// Waits `duration` of this clock's time; throws `CancellationError` if cancelled first.
    package func wait(_ duration: Swift.Duration) async throws {
        try await sleep(until: now.advanced(by: duration), tolerance: nil)
    }
}

/// The system's clocks: monotonic time from `ContinuousClock`, wall-clock time from `Date`.
package struct SystemClock: HeraldClock {
    package init() {}

    package var now: ContinuousClock.Instant { .now }
    package var minimumResolution: Swift.Duration { ContinuousClock().minimumResolution }
    package var date: Date { Date() }

    package func sleep(until deadline: ContinuousClock.Instant, tolerance: Swift.Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    package var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
