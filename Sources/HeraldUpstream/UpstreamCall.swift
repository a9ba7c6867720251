package import HeraldCore
package import Logging
package import NIOCore
package import NIOHTTP1
import NIOPosix
import Tracing

/// One request to an upstream, as a pushkin builds it.
package struct UpstreamRequest: Sendable {
    package var method: HTTPMethod
    package var url: String
    package var headers: HTTPHeaders
    package var body: ByteBuffer?
    /// The (lower-case) names of headers whose values change from one request to the next (a
    /// message id, an expiry): over HTTP/2 they are sent literally, never entering HPACK's
    /// dynamic table, where each would push out an entry that does repeat (RFC 7541 §6.2.2).
    package var changingHeaders: Set<String>
    /// The request target, when the caller made it (`/3/device/…`): `url` is then the
    /// transport's origin, and no URL is built per request to be taken apart again.
    package var path: String?

    package init(
        method: HTTPMethod = .POST, url: String, path: String? = nil, headers: HTTPHeaders, body: ByteBuffer?,
        changingHeaders: Set<String> = []
    ) {
        self.method = method
        self.url = url
        self.path = path
        self.headers = headers
        self.body = body
        self.changingHeaders = changingHeaders
    }
}

/// Something that carries an `UpstreamRequest` to its server: a pooled HTTP client, or the APNs
/// connection pool. Throws on network errors and timeouts.
package protocol UpstreamTransport: Sendable {
    func send(_ request: UpstreamRequest) async throws -> UpstreamResponse
}

/// What a pushkin makes of one answer.
package enum UpstreamVerdict<Value: Sendable>: Sendable {
    /// Finished: delivered, rejected, or a failure no retry can fix.
    case done(Value)
    /// Temporary: retried within the policy, after the answer's `Retry-After` or the backoff.
    case retry(OutcomeReason)
    /// The upstream refused the call's credential (an expired provider token, a revoked access
    /// token): `UpstreamCall` asks its `UpstreamCredential` for a new one and sends again at once,
    /// once per call and within the attempts and budget. Refused again, or without a credential,
    /// the call fails with this reason.
    case renewCredential(OutcomeReason)
}

/// Why a request could not be built for this attempt.
package enum UpstreamPreparationError: Error, Sendable {
    /// Worth another attempt (an OAuth token endpoint that did not answer).
    case temporary(OutcomeReason)
    /// No attempt can succeed (a key that cannot sign).
    case permanent(OutcomeReason)
}

/// The one path every upstream call takes: build the request, send it, time it and count its
/// status under Sygnal's metric names, classify the answer, retry temporary failures with backoff
/// and `Retry-After` within the app's `RetryPolicy`. Network errors are temporary. A pushkin
/// supplies only how to build a request and what an answer means.
package struct UpstreamCall: Sendable {
    package let transport: any UpstreamTransport
    package let policy: RetryPolicy
    package let metrics: UpstreamMetrics
    /// What the pauses between attempts and `Retry-After` dates are measured on.
    package let clock: any HeraldClock
    /// Whose holds a pushback answer sets and every request waits out (docs/operations.md,
    /// "Pushback"); nil: each call honours `Retry-After` by itself (APNs: Apple's 429 is about
    /// one device).
    package let pushback: PushbackScope?
    /// The provider's id for a message it accepted, from its answer, for the delivery trace.
    package let providerId: (@Sendable (UpstreamResponse) -> String?)?

    package init(
        transport: any UpstreamTransport, policy: RetryPolicy, metrics: UpstreamMetrics, clock: any HeraldClock,
        pushback: PushbackScope? = nil, providerId: (@Sendable (UpstreamResponse) -> String?)? = nil
    ) {
        self.transport = transport
        self.policy = policy
        self.metrics = metrics
        self.clock = clock
        self.pushback = pushback
        self.providerId = providerId
    }

    /// Runs attempts until one is done or the policy gives up; the failure carries the last
    /// temporary (or the permanent) reason. With the result comes what the delivery trace keeps
    /// of the call: its attempts and the provider's id for the message.
    package func run<Value: Sendable>(
        logger: Logger,
        prepare: (_ attempt: Int) async throws(UpstreamPreparationError) -> UpstreamRequest,
        classify: (UpstreamResponse) async -> UpstreamVerdict<Value>
    ) async -> (Result<Value, UpstreamCallFailure>, DeliveryNote) {
        await run(logger: logger, credential: nil) { attempt, _ throws(UpstreamPreparationError) in
            try await prepare(attempt)
        } classify: {
            await classify($0)
        }
    }

    /// `run` for an upstream that authenticates each request: `prepare` gets the credential's
    /// current value (nil without a credential). A `renewCredential` answer drops that value from
    /// the credential at once and, once per call and within the policy, sends again with a new one.
    package func run<Value: Sendable>(
        logger: Logger,
        credential: (any UpstreamCredential)?,
        prepare: (_ attempt: Int, _ credential: String?) async throws(UpstreamPreparationError) -> UpstreamRequest,
        classify: (UpstreamResponse) async -> UpstreamVerdict<Value>
    ) async -> (Result<Value, UpstreamCallFailure>, DeliveryNote) {
        var state = CallState()
        let result = await Retrying.run(policy: policy, clock: clock) { attempt -> Retrying.Step<Value?, OutcomeReason> in
            if state.unanswered {
                // The last attempt's request may have arrived: this one can make the push arrive twice.
                metrics.resentUnanswered.increment()
                state.unanswered = false
            }
            let preparation: AttemptStage<UpstreamRequest, Value> = await prepared(
                attempt, credential: credential, prepare: prepare, state: &state, logger: logger)
            guard case .proceed(let request) = preparation else { return preparation.finished }
            if let held = held(request) {
                state.permanent = held
                return .done(nil)
            }
            let sending: AttemptStage<UpstreamResponse, Value> = await answer(to: request, attempt: attempt, state: &state, logger: logger)
            guard case .proceed(let response) = sending else { return sending.finished }
            return await judge(response, to: request, classify: classify, credential: credential, state: &state, logger: logger)
        }
        return Self.ended(result, state: state)
    }

    /// The call's result from its attempts', with its note for the delivery trace (synchronous
    /// and out of line, as the attempt's cold paths).
    @inline(never)
    private static func ended<Value: Sendable>(_ result: Result<Value?, RetryExhausted<OutcomeReason>>, state: CallState)
        -> (Result<Value, UpstreamCallFailure>, DeliveryNote)
    {
        let note = DeliveryNote(attempts: state.attempts, providerId: state.providerId)
        switch result {
        case .success(let value?): return (.success(value), note)
        case .success(nil):
            return (
                .failure(UpstreamCallFailure(reason: state.permanent ?? .localError("no request"), attempts: 1, budgetSpent: false)),
                note
            )
        case .failure(let exhausted):
            return (
                .failure(UpstreamCallFailure(reason: exhausted.reason, attempts: exhausted.attempts, budgetSpent: exhausted.budgetSpent)),
                note
            )
        }
    }

    /// Step 1 of an attempt: the credential's current value, and the request built with it. A
    /// preparation that may work later is retried; one that never can ends the call. Each step is
    /// kept out of `run`, so that an attempt's frame holds one step's values at a time, not all
    /// three steps' (docs/architecture.md, "Values on the notify path").
    @inline(never)
    private func prepared<Value: Sendable>(
        _ attempt: Int, credential: (any UpstreamCredential)?,
        prepare: (_ attempt: Int, _ credential: String?) async throws(UpstreamPreparationError) -> UpstreamRequest,
        state: inout CallState, logger: Logger
    ) async -> AttemptStage<UpstreamRequest, Value> {
        do throws(UpstreamPreparationError) {
            state.sent = try await credential?.value()
            return .proceed(try await prepare(attempt, state.sent))
        } catch {
            return .finish(notPrepared(error, state: &state, logger: logger))
        }
    }

    /// Why a request was not prepared, logged. Synchronous and out of line, as the other cold
    /// paths of an attempt are: what they need lives on the thread's stack while they run, not in
    /// every call's async frame (docs/architecture.md, "Values on the notify path").
    @inline(never)
    private func notPrepared<Value: Sendable>(_ error: UpstreamPreparationError, state: inout CallState, logger: Logger)
        -> Retrying.Step<Value?, OutcomeReason>
    {
        switch error {
        case .temporary(let reason):
            if let suppressed = LogThrottle.perDevice.admit("Upstream request not prepared \(metrics.type)") {
                logger.warning(
                    "Upstream request could not be prepared",
                    metadata: [
                        "upstream": "\(metrics.type)", "reason": "\(reason)", "similar_lines_suppressed": "\(suppressed)",
                    ])
            }
            return .retry(reason: reason, after: nil)
        case .permanent(let reason):
            state.permanent = reason
            return .done(nil)
        }
    }

    /// Step 2: the request sent, timed and counted. A network error is retried (noting whether
    /// the request may have arrived); an address the check refused ends the call.
    @inline(never)
    private func answer<Value: Sendable>(to request: UpstreamRequest, attempt: Int, state: inout CallState, logger: Logger) async
        -> AttemptStage<UpstreamResponse, Value>
    {
        state.attempts += 1
        do {
            return .proceed(
                try await Spans.enabled ? traced(request, attempt: attempt) : metrics.measure { try await transport.send(request) })
        } catch {
            return .finish(notAnswered(error, state: &state, logger: logger))
        }
    }

    /// Why a request got no answer: an address the check refused ends the call, as does a field
    /// that cannot be sent; anything else is retried, noting whether the request may have arrived.
    @inline(never)
    private func notAnswered<Value: Sendable>(_ error: any Error, state: inout CallState, logger: Logger)
        -> Retrying.Step<Value?, OutcomeReason>
    {
        switch error {
        case let refused as PeerAddressRefused:
            state.attempts -= 1
            state.permanent = .endpointRefused(refused.reason)
            return .done(nil)
        case let invalid as InvalidHeaderField:
            // Sent again it would be the same request: no retry.
            logger.error("Upstream request not sent", metadata: ["upstream": "\(metrics.type)", "reason": "\(invalid)"])
            state.permanent = .localError("\(invalid)")
            return .done(nil)
        default:
            state.unanswered = Self.mayHaveArrived(error)
            if let suppressed = LogThrottle.perDevice.admit("Upstream request failed \(metrics.type)") {
                logger.warning(
                    "Upstream request failed",
                    metadata: ["upstream": "\(metrics.type)", "error": "\(error)", "similar_lines_suppressed": "\(suppressed)"])
            }
            return .retry(reason: .network("\(error)"), after: nil)
        }
    }

    /// Between steps 1 and 2: while the request's origin is held (its pushback), nothing is sent
    /// and the call fails at once as temporary.
    private func held(_ request: UpstreamRequest) -> OutcomeReason? {
        guard let pushback, !pushback.holds.isEmpty, let left = pushback.holds.remaining(pushback.origin(of: request)) else {
            return nil
        }
        return .pushback(seconds: Int(left.seconds.rounded(.up)))
    }

    /// Step 3: the pushkin's verdict on the answer. A temporary one waits for `Retry-After`; a
    /// pushback answer (429, or 503 with `Retry-After`) holds the whole origin and this call waits
    /// the hold out; a refused credential is forgotten and, once per call, renewed for an
    /// immediate resend.
    @inline(never)
    private func judge<Value: Sendable>(
        _ response: UpstreamResponse, to request: UpstreamRequest, classify: (UpstreamResponse) async -> UpstreamVerdict<Value>,
        credential: (any UpstreamCredential)?, state: inout CallState, logger: Logger
    ) async -> Retrying.Step<Value?, OutcomeReason> {
        let verdict = await classify(response)
        if case .renewCredential(let reason) = verdict, let credential {
            await refuse(state.sent, of: credential, reason: reason, logger: logger)
        }
        return settle(verdict, of: response, to: request, withCredential: credential != nil, state: &state, logger: logger)
    }

    /// What the verdict on an answer makes of the attempt, the credential already told of a
    /// refusal (synchronous and out of line, as `notAnswered`).
    @inline(never)
    private func settle<Value: Sendable>(
        _ verdict: UpstreamVerdict<Value>, of response: UpstreamResponse, to request: UpstreamRequest, withCredential: Bool,
        state: inout CallState, logger: Logger
    ) -> Retrying.Step<Value?, OutcomeReason> {
        var retryAfter: Duration? {
            RetryAfter.parse(response.headers.first(name: "retry-after"), now: clock.date)
        }
        if let pushback, policy.pushbackMax > .zero {
            if case .retry(let reason) = verdict, response.status == 429 || (response.status == 503 && retryAfter != nil) {
                let origin = pushback.origin(of: request)
                let hold = pushback.holds.pushedBack(
                    origin, pushkin: pushback.pushkin, originClass: pushback.originClass(origin), retryAfter: retryAfter,
                    initial: policy.initialBackoff, maximum: policy.pushbackMax)
                return .retry(reason: reason, after: hold)
            }
            // The origin is worked out only where a hold exists: a call to an origin never held costs nothing.
            if !pushback.holds.isEmpty { pushback.holds.answered(pushback.origin(of: request)) }
        }
        switch verdict {
        case .done(let value):
            state.providerId = providerId?(response)
            return .done(value)
        case .retry(let reason):
            return .retry(reason: reason, after: retryAfter)
        case .renewCredential(let reason):
            guard withCredential else {
                logger.error(
                    "Upstream refused a request that carries no credential",
                    metadata: ["upstream": "\(metrics.type)", "reason": "\(reason.label)"])
                state.permanent = reason
                return .done(nil)
            }
            guard !state.renewed else {
                state.permanent = reason
                return .done(nil)
            }
            state.renewed = true
            return .retry(reason: reason, after: .zero)
        }
    }

    /// The upstream refused `value`: the credential forgets it now, before any retry is decided,
    /// so that neither this call's next attempt nor any other request sends it again, even when no
    /// attempt is left (docs/operations.md, "A refused credential"). Counted; a value made to
    /// replace a refused one and refused too is a configuration problem, logged once in a row
    /// with what to check.
    private func refuse(_ value: String?, of credential: any UpstreamCredential, reason: OutcomeReason, logger: Logger) async {
        guard let value else { return }
        let refusal = await credential.refuse(value)
        metrics.countRefusal(refusal)
        switch refusal {
        case .alreadyReplaced, .droppedAfterRenewal(firstInARow: false): break
        case .dropped:
            logger.notice(
                "Upstream refused the credential; a new one is made for the next request",
                metadata: ["upstream": "\(metrics.type)", "pushkin": "\(metrics.pushkin)", "reason": "\(reason.label)"])
        case .droppedAfterRenewal(firstInARow: true):
            logger.error(
                "Upstream refused a credential made to replace a refused one: renewing does not help; check \(credential.whatToCheck)",
                metadata: ["upstream": "\(metrics.type)", "pushkin": "\(metrics.pushkin)", "reason": "\(reason.label)"])
        }
    }

    /// Whether a request that failed with `error` may still have reached the upstream (its answer
    /// was lost or late: a timeout, a reset stream, a connection closed mid-exchange), rather than
    /// certainly not (no connection, a refused address, a proxy that said no, a wait in the pool's
    /// queue that ran out).
    static func mayHaveArrived(_ error: any Error) -> Bool {
        switch error {
        case let error as UpstreamConnectionError:
            switch error {
            case .connectTimeout, .proxyRefused, .notHTTP2, .shutDown: return false
            case .closedUnanswered, .reset, .malformedResponse: return true
            }
        case is NetworkAddress.ResolutionError, is PeerAddressRefused, is NIOConnectionError, is AdmissionTimeout: return false
        case let error as ChannelError:
            if case .connectTimeout = error { return false }
            return error != .ioOnClosedChannel
        case let error as IOError where [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains(error.errnoCode): return false
        default: return true
        }
    }

    /// One attempt in a client span, when tracing is enabled (out of line: its frame is taken only then).
    @inline(never)
    private func traced(_ request: UpstreamRequest, attempt: Int) async throws -> UpstreamResponse {
        try await withSpan("\(metrics.type) upstream", ofKind: .client) { span in
            guard span.isRecording else { return try await metrics.measure { try await transport.send(request) } }
            span.attributes["herald.attempt"] = attempt
            let response = try await metrics.measure { try await transport.send(request) }
            span.attributes["http.response.status_code"] = response.status
            return response
        }
    }

    /// `run` for one device: a failure becomes `.failed` with its reason (a 502 for the homeserver),
    /// except a connection the address check refused, which is skipped like an endpoint the policy
    /// refused (no retry can reach it).
    package func deliver(
        logger: Logger,
        prepare: (_ attempt: Int) async throws(UpstreamPreparationError) -> UpstreamRequest,
        classify: (UpstreamResponse) async -> UpstreamVerdict<DeviceOutcome>
    ) async -> DeviceResult {
        await deliver(logger: logger, credential: nil) { attempt, _ throws(UpstreamPreparationError) in
            try await prepare(attempt)
        } classify: {
            await classify($0)
        }
    }

    /// `deliver` for an upstream that authenticates each request (see `run(logger:credential:…)`).
    package func deliver(
        logger: Logger,
        credential: (any UpstreamCredential)?,
        prepare: (_ attempt: Int, _ credential: String?) async throws(UpstreamPreparationError) -> UpstreamRequest,
        classify: (UpstreamResponse) async -> UpstreamVerdict<DeviceOutcome>
    ) async -> DeviceResult {
        let (result, note) = await run(logger: logger, credential: credential, prepare: prepare, classify: classify)
        switch result {
        case .success(let outcome): return DeviceResult(outcome, note: note)
        case .failure(let failure):
            if case .endpointRefused = failure.reason { return DeviceResult(.skipped(reason: failure.reason), note: note) }
            return DeviceResult(.failed(reason: failure.reason), note: note)
        }
    }
}

/// An upstream call that did not finish: why, after how many attempts.
package struct UpstreamCallFailure: Error, Sendable, Equatable {
    package var reason: OutcomeReason
    package var attempts: Int
    package var budgetSpent: Bool
}

/// What one call remembers from attempt to attempt.
private struct CallState {
    /// The credential value the last request carried.
    var sent: String?
    /// Whether the credential was renewed already (once per call).
    var renewed = false
    /// Why the call ended without a value, when it did.
    var permanent: OutcomeReason?
    /// Whether the last attempt's request may have arrived without its answer.
    var unanswered = false
    /// Requests sent (the delivery trace's attempts).
    var attempts = 0
    /// The provider's id for the message, from the answer that finished the call.
    var providerId: String?
}

/// Where an attempt's step leaves it: on to the next step with its result, or finished.
private enum AttemptStage<T, Value: Sendable> {
    case proceed(T)
    case finish(Retrying.Step<Value?, OutcomeReason>)

    /// The step that finished the attempt (never asked of `proceed`).
    var finished: Retrying.Step<Value?, OutcomeReason> {
        switch self {
        case .finish(let step): return step
        case .proceed: return .done(nil)
        }
    }
}
