package import Foundation
package import HeraldCore

/// Bounded retries for an upstream: at most `maxAttempts` tries, exponential backoff from
/// `initialBackoff`, `Retry-After` honoured, and never past `budget` after the first try started,
/// so that a homeserver's request (60 s timeout in Synapse) gets an answer in time.
package struct RetryPolicy: Sendable, Equatable {
    package var maxAttempts: Int
    package var initialBackoff: Duration
    package var maxBackoff: Duration
    package var budget: Duration
    /// The longest hold a pushback answer puts on a whole origin (docs/operations.md, "Pushback");
    /// zero: no hold, each call honours `Retry-After` by itself.
    package var pushbackMax: Duration

    package init(
        maxAttempts: Int = 3, initialBackoff: Duration = .milliseconds(500), maxBackoff: Duration = .seconds(8),
        budget: Duration = .seconds(20), pushbackMax: Duration = .seconds(300)
    ) {
        self.maxAttempts = maxAttempts
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.budget = budget
        self.pushbackMax = pushbackMax
    }

    /// Reads `max_attempts`, `retry_initial_backoff`, `retry_max_backoff`, `retry_budget` and, for
    /// an upstream whose pushback holds a whole origin, `pushback_max`.
    package static func read(from config: ConfigSection, defaults: RetryPolicy = RetryPolicy(), pushback: Bool = true) -> RetryPolicy {
        RetryPolicy(
            maxAttempts: config.int("max_attempts", default: defaults.maxAttempts, range: 1...20),
            initialBackoff: config.seconds("retry_initial_backoff", default: defaults.initialBackoff.seconds, range: 0...60),
            maxBackoff: config.seconds("retry_max_backoff", default: defaults.maxBackoff.seconds, range: 0...300),
            budget: config.seconds("retry_budget", default: defaults.budget.seconds, range: 0...300),
            pushbackMax: pushback ? config.seconds("pushback_max", default: defaults.pushbackMax.seconds, range: 0...3600) : .zero
        )
    }

    /// The pause before attempt `attempt + 1` (attempt counts from 1), with ±20 % jitter.
    package func backoff(afterAttempt attempt: Int) -> Duration {
        let base = initialBackoff.seconds * pow(2, Double(attempt - 1))
        let capped = min(base, maxBackoff.seconds)
        let jittered = capped * Double.random(in: 0.8...1.2)
        return .milliseconds(Int64(jittered * 1000))
    }
}

/// Parses `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
package enum RetryAfter {
    package static func parse(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: value) {
                return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000))
            }
        }
        return nil
    }
}

/// Runs attempts under a `RetryPolicy`. `UpstreamCall` is built on it; it knows nothing of HTTP.
package enum Retrying {
    package enum Step<Result: Sendable, Reason: Sendable>: Sendable {
        /// Finished (delivered, rejected or a permanent failure).
        case done(Result)
        /// A temporary failure; `after` is the upstream's Retry-After, if any.
        case retry(reason: Reason, after: Duration?)
    }

    /// Calls `attempt` until it is done, attempts run out, or the next pause would end past the
    /// budget. Returns the result, or the last temporary failure's reason. Out of line: its pause
    /// (an existential clock's wait) would otherwise widen the frame of every caller that inlines it.
    @inline(never)
    package static func run<Result: Sendable, Reason: Sendable>(
        policy: RetryPolicy,
        clock: any HeraldClock,
        attempt: (Int) async -> Step<Result, Reason>
    ) async -> Swift.Result<Result, RetryExhausted<Reason>> {
        let start = clock.now
        var number = 1
        while true {
            switch await attempt(number) {
            case .done(let result):
                return .success(result)
            case .retry(let reason, let after):
                guard number < policy.maxAttempts else {
                    return .failure(RetryExhausted(reason: reason, attempts: number, budgetSpent: false))
                }
                let pause = after ?? policy.backoff(afterAttempt: number)
                let elapsed = clock.now - start
                guard elapsed + pause < policy.budget, !Task.isCancelled else {
                    return .failure(RetryExhausted(reason: reason, attempts: number, budgetSpent: true))
                }
                try? await clock.wait(pause)
                number += 1
            }
        }
    }
}

/// Retries ran out: the last temporary failure, how many attempts were made, and whether the
/// budget (rather than `max_attempts`) stopped them.
package struct RetryExhausted<Reason: Sendable>: Error, Sendable {
    package var reason: Reason
    package var attempts: Int
    package var budgetSpent: Bool
}

extension RetryExhausted: Equatable where Reason: Equatable {}
