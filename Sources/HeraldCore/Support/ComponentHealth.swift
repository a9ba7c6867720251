package import FoundationEssentials
package import Logging
package import Metrics
import NIOPosix
import Synchronization

/// Whether a dependency an instance keeps serving without (a front end's database) answers, as the
/// outcome of its latest use: `/health` lists the failing ones (docs/operations.md, "Health"). It
/// is a report, not a probe: nothing asks the dependency for it, so a load balancer's checks cost
/// the database nothing, and a failing store does not take the instance out (the Matrix API and the
/// relay need no database).
package final class ComponentHealth: Sendable {
    /// The component's name in `/health` and in `herald_component_up{component}`.
    package let name: String
    private let state = Mutex(State())
    /// `herald_component_failing{component}`: 1 while it fails, else 0.
    private let gauge: Gauge?
    /// `herald_component_skipped_total{component}`: uses not tried while it was silent.
    private let skips: Counter?
    /// When a failure began (docs/architecture.md, "Time").
    let clock: any HeraldClock
    /// Where a change of its state is said: a failure once, and again only when its error
    /// changes (a refused password after a timeout) or a `logInterval` later, and the recovery, at
    /// most once a `logInterval` (a component that fails and recovers by turns).
    private let logger: Logger?

    struct State {
        var failingSince: Date?
        var lastError = ""
        /// A use missed its deadline: the component is skipped (`Skipped`) but for one probe at a
        /// time, until a use succeeds.
        var silent = false
        var probing = false
        /// When the last probe ended, or the use that made it silent.
        var lastProbe: HeraldInstant?
        /// The errors written to the log within the last `logInterval`, and when, so that a
        /// failure is logged once, and a component that fails and recovers by turns (or whose uses
        /// and probes fail differently by turns) writes a line of each kind a `logInterval`.
        var logged: [String: HeraldInstant] = [:]
        var recoveryLoggedAt: HeraldInstant?
    }

    /// How often a silent component is probed, at most.
    package static let probeInterval: Duration = .seconds(1)
    /// How often the same failure, or a recovery, is logged at most.
    package static let logInterval: Duration = .seconds(60)
    /// How many different errors of a `logInterval` are remembered, so that each is logged once.
    static let errorsRemembered = 16

    /// The component missed a deadline and has not answered since: this use was not tried, so
    /// that no caller waits on a silent database (docs/operations.md, "A silent store").
    package struct Skipped: Error, CustomStringConvertible {
        package let component: String
        package var description: String { "\(component) has not answered since it missed its deadline; not waited on" }
    }

    package init(name: String, metrics: (any MetricsFactory)? = nil, clock: any HeraldClock, logger: Logger? = nil) {
        self.name = name
        self.clock = clock
        self.logger = logger
        gauge = metrics.map { Gauge(label: MetricName.componentFailing, dimensions: [("component", name)], factory: $0) }
        skips = metrics.map { Counter(label: MetricName.componentSkipped, dimensions: [("component", name)], factory: $0) }
        gauge?.record(0)
    }

    /// Its latest use succeeded.
    package func succeeded() {
        let was = state.withLock { state -> (since: Date, log: Bool)? in
            defer {
                state.failingSince = nil
                state.silent = false
                state.lastProbe = nil
            }
            guard let since = state.failingSince else { return nil }
            // The clock is read only on a recovery, never on a working component's every use.
            let now = clock.now
            let log = state.recoveryLoggedAt.map { now - $0 >= Self.logInterval } ?? true
            if log { state.recoveryLoggedAt = now }
            return (since, log)
        }
        guard let was else { return }
        gauge?.record(0)
        guard was.log else { return }
        let seconds = Int(clock.date.timeIntervalSince(was.since).rounded())
        logger?.notice("\(name) answers again", metadata: ["component": "\(name)", "failed_for_seconds": "\(seconds)"])
    }

    /// Whether it is skipped: it missed a deadline and has not answered since.
    package var isSilent: Bool { state.withLock { $0.silent } }
    /// Whether a probe of a silent component is under way.
    package var isProbing: Bool { state.withLock { $0.probing } }

    /// Its latest use failed with `error` (a timeout, a lost connection).
    package func failed(_ error: any Error) { failed(error, at: clock.date) }

    /// `failed` at `now`.
    package func failed(_ error: any Error, at now: Date) {
        let text = String(String(describing: error).prefix(400))
        let instant = clock.now
        let isNew = state.withLock { state -> Bool in
            if state.failingSince == nil { state.failingSince = now }
            state.lastError = text
            guard state.logged[text].map({ instant - $0 >= Self.logInterval }) ?? true else { return false }
            state.logged = state.logged.filter { instant - $0.value < Self.logInterval }
            if state.logged.count >= Self.errorsRemembered { state.logged.removeAll() }
            state.logged[text] = instant
            return true
        }
        gauge?.record(1)
        if isNew {
            logger?.warning(
                "\(name) failed; /health names it until it answers again",
                metadata: ["component": "\(name)", "error": "\(text)"])
        }
    }

    /// Checks the component once, at start, with `probe` (a silent one's): a failure is its
    /// problem at once, and the component is silent, so that `/health` and the log name a refused
    /// password or a missing database before the first use, and that use does not wait its
    /// deadline for it; the next use a `probeInterval` later probes it again. The error, if any.
    package func checkAtStart(_ probe: () async throws -> Void) async -> (any Error)? {
        do {
            try await probe()
            return nil
        } catch is CancellationError {
            return nil
        } catch {
            failed(error)
            let now = clock.now
            state.withLock { state in
                state.silent = true
                state.lastProbe = now
            }
            return error
        }
    }

    /// nil while it works; else since when it fails and its latest error.
    package var problem: (since: Date, error: String)? {
        state.withLock { state in state.failingSince.map { ($0, state.lastError) } }
    }

    /// Records the outcome of `work`. An error for which `isAnswer` holds came from a component
    /// that answered (the ADAMANT store's lost lease), and counts as a success.
    ///
    /// An error for which `isSilence` holds (the use's deadline passed without an answer) makes the
    /// component silent: from then on a use is not tried but fails at once with `Skipped`, so that
    /// no caller waits on it, and `probe` (a harmless query, bounded by the same deadline) tests it
    /// in the background, one at a time and at most one a `probeInterval` after the last answer;
    /// the first probe or use that succeeds ends it. Without a probe, one use at a time is tried.
    package func track<T>(
        _ work: () async throws -> T, isAnswer: (any Error) -> Bool = { _ in false }, isSilence: (any Error) -> Bool = { _ in false },
        probe: (@Sendable () async throws -> Void)? = nil
    ) async throws -> T {
        let use = try begin(probe: probe)
        let result: Result<T, any Error>
        do {
            result = .success(try await work())
        } catch {
            result = .failure(error)
        }
        return try end(use, result, isAnswer: isAnswer, isSilence: isSilence).get()
    }

    /// `track`'s first half, for a use whose work ends elsewhere (a statement handed to another
    /// task): throws `Skipped` while the component is silent; `end` takes what it returns.
    package func begin(probe: (@Sendable () async throws -> Void)? = nil) throws -> Use {
        let now = clock.now
        let turn = state.withLock { state -> Turn in
            guard state.silent else { return .use }
            guard !state.probing, state.lastProbe.map({ now - $0 >= Self.probeInterval }) ?? true else { return .skip }
            state.probing = true
            return probe == nil ? .probeByUse : .probeInBackground
        }
        switch turn {
        case .use, .probeByUse:
            return Use(turn: turn)
        case .skip:
            skips?.increment()
            throw Skipped(component: name)
        case .probeInBackground:
            if let probe { startProbe(probe) }
            skips?.increment()
            throw Skipped(component: name)
        }
    }

    /// `track`'s second half: records `result`, the outcome of the use `begin` let through.
    package func end<T>(
        _ use: Use, _ result: Result<T, any Error>, isAnswer: (any Error) -> Bool = { _ in false },
        isSilence: (any Error) -> Bool = { _ in false }
    ) -> Result<T, any Error> {
        defer { if use.turn == .probeByUse { probed() } }
        switch result {
        case .success:
            succeeded()
        case .failure(let error):
            if isAnswer(error) {
                succeeded()
            } else if !(error is CancellationError) {
                failed(error)
                if isSilence(error) {
                    let end = clock.now
                    state.withLock { state in
                        state.silent = true
                        state.lastProbe = end
                    }
                }
            }
        }
        return result
    }

    /// A use `begin` let through.
    package struct Use: Sendable {
        fileprivate let turn: Turn
    }

    fileprivate enum Turn {
        case use, skip, probeByUse, probeInBackground
    }

    /// A probe ended: the next may start a `probeInterval` from now.
    private func probed() {
        let now = clock.now
        state.withLock {
            $0.probing = false
            $0.lastProbe = now
        }
    }

    /// Runs `probe` outside the request that found it due (no request waits on a silent component),
    /// on an event loop's task, which its own deadline ends.
    private func startProbe(_ probe: @escaping @Sendable () async throws -> Void) {
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
        promise.completeWithTask(probe)
        promise.futureResult.whenComplete { [self] result in
            probed()
            switch result {
            case .success: succeeded()
            // What `/health` shows is the probe's failure (a refused connection says why).
            case .failure(let error): if !(error is CancellationError) { failed(error) }
            }
        }
    }
}
