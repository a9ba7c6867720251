package import HeraldCore
import Synchronization

/// `per_device_per_minute`: how many pushes one device of an app is sent a minute, at most
/// (docs/operations.md, "Sources"): FCM documents 240 a minute to one device, past which it
/// throttles the app's messages to it, and APNs answers `TooManyRequests` for the token. A bucket
/// per pushkey, as large as a minute's budget, refilled evenly.
///
/// A push past it is not sent: the device fails for now (429 with `Retry-After` when nothing else
/// failed; the homeserver retries, and the delivery record answers the devices already sent). A
/// badge update (no event) past it waits for the budget instead, and only the latest waiting one
/// of a device is sent: an earlier one is dropped and counted.
package final class DeviceBudget: Sendable {
    package let perMinute: Int
    private let buckets = TokenBuckets<String>()
    /// Each device's latest waiting badge update, by a number that grows.
    private let waiting = Mutex<(next: UInt64, latest: [String: UInt64])>((0, [:]))
    private let clock: any HeraldClock

    package init(perMinute: Int, clock: any HeraldClock) {
        self.perMinute = perMinute
        self.clock = clock
    }

    /// Takes one push of `pushkey`'s budget: nil when taken, else how long until one is there.
    package func take(_ pushkey: String) -> Duration? {
        buckets.take(pushkey, now: clock.now, perSecond: Double(perMinute) / 60, burst: perMinute)
    }

    /// A badge update past the budget: waits until the budget allows it and takes it, true; false
    /// when a later badge update of the device came meanwhile (this one is dropped for it).
    package func waitForBadge(_ pushkey: String, wait first: Duration) async -> Bool {
        let ticket = waiting.withLock { state -> UInt64 in
            state.next += 1
            state.latest[pushkey] = state.next
            return state.next
        }
        var wait = first
        while true {
            try? await clock.wait(wait)
            let latest = waiting.withLock { $0.latest[pushkey] == ticket }
            guard latest, !Task.isCancelled else { return false }
            guard let more = take(pushkey) else {
                waiting.withLock { state in
                    if state.latest[pushkey] == ticket { state.latest.removeValue(forKey: pushkey) }
                }
                return true
            }
            wait = more
        }
    }
}
