import Foundation
import HeraldCore
import HeraldHTTPServer
import Logging
import NIOCore
import Pushkins

/// `POST /_matrix/push/v1/notify`.
///
/// Parse, dispatch, render: the `Dispatcher` routes every device and gives each an outcome (one
/// failure never discards the others); this answers for them.
///
/// Status: 200 `{"rejected": [...]}` when every device was delivered, rejected, skipped or
/// dropped for good. When any device *failed* (upstream unavailable, retry budget spent,
/// in-flight limit), the answer is 502 so that the homeserver retries the request; the body then
/// still carries the rejections already known, `{"errcode": "M_UNKNOWN", "error": …,
/// "rejected": [...]}`; 429 with `Retry-After` and `M_LIMIT_EXCEEDED` instead when every failure
/// was a pause with a known end (pushback, the in-flight limit or the source's share of it, the
/// device's budget), or the source is past `notify.sources`. A 400 only ever means a body that
/// can never succeed.
package struct NotifyHandler: Sendable {
    let dispatcher: Dispatcher
    let metrics: GatewayMetrics
    let logger: Logger
    /// What the notify's duration is measured on (docs/architecture.md, "Time").
    let clock: any HeraldClock
    /// Requests in progress on this handler (a reload waits for them before closing old pushkins).
    let inFlight = InFlight()
    /// The configured app ids and the notify's longer keys, which a parse shares rather than copies.
    let known: KnownStrings
    /// `notify.sources` (nil: no rate per source).
    let rates: SourceRateLimiter?
    /// The sources told to back off, logged once a minute.
    let limited = SourceLimitLog()

    init(dispatcher: Dispatcher, metrics: GatewayMetrics, logger: Logger, clock: any HeraldClock, sources: SourceRates = SourceRates()) {
        self.clock = clock
        self.rates = sources.isEmpty ? nil : SourceRateLimiter(rates: sources)
        self.known = NotificationParser.knownStrings(appIds: dispatcher.router.exactAppIds)
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.logger = logger
    }

    /// `notify.answer_within` (docs/operations.md, "Once"): a notify not answered by then is
    /// answered 502 by the server while its calls go on; their outcomes are recorded, so that the
    /// homeserver's retry is answered from the record. Nil with `answer_within: 0`.
    var answerDeadline: AnswerDeadline? {
        guard let within = dispatcher.once?.answerWithin, within > .zero else { return nil }
        return AnswerDeadline(
            within: within,
            response: MatrixErrors().render(NotifyError.dispatchFailed(count: 0, first: .answerDeadline, rejected: [])))
    }

    /// The `{"rejected": […]}` answer, or the `NotifyError` to answer instead.
    func handle(_ request: ServerRequest) async throws(NotifyError) -> ServerResponse {
        let start = clock.now
        inFlight.enter()
        metrics.requestsInFlight.record(metrics.inFlightCount.add(1))
        defer {
            metrics.requestsInFlight.record(metrics.inFlightCount.add(-1))
            inFlight.leave()
        }
        do {
            let response = try await process(request, start: start)
            metrics.notifyFinished(code: Int(response.status.code), duration: clock.now - start)
            return response
        } catch {
            metrics.notifyFinished(code: Int(error.status.code), duration: clock.now - start)
            throw error
        }
    }

    /// A source told to back off: counted by reason, and the top sources logged once a minute.
    private func told(_ source: RequestSource?, _ reason: SourceLimitLog.Reason) {
        if reason == .rate { metrics.counter(MetricName.sourceLimited, [("reason", "rate")]).increment() }
        if let (line, metadata) = limited.refused(source, reason, now: clock.now) { logger.warning("\(line)", metadata: metadata) }
    }

    /// The answer to nearly every notify, made once: its body is shared, not written again.
    private static let noneRejected = ServerResponse.json(.ok, ["rejected": []])

    private func process(_ request: ServerRequest, start: HeraldInstant) async throws(NotifyError) -> ServerResponse {
        // Its lines carry `request_id` through `RequestContext.metadataProvider` (the server binds
        // the id around the request): no logger of its own per notify.
        let logger = self.logger
        if let rates, let source = request.source, let wait = rates.take(source, now: clock.now) {
            told(source, .rate)
            throw .sourceRate(retryAfterSeconds: max(1, Int(wait.seconds.rounded(.up))))
        }

        let notification: PushNotification
        do {
            notification = try NotificationParser.parse(body: request.body.readableBytesView, known: known)
        } catch {
            logger.info("Invalid notify request", metadata: ["error": "\(error.message)"])
            switch error {
            case .notJSON: throw .notJSON(error.message)
            case .invalid: throw .badJSON(error.message)
            }
        }
        metrics.notificationsReceived.increment()
        metrics.devicesReceived.increment(by: Int64(notification.devices.count))

        let dispatched = await dispatcher.dispatchReporting(notification, logger: logger)
        let outcomes = dispatched.outcomes
        var rejected: [String] = []
        var failures: [OutcomeReason] = []
        for (device, outcome) in zip(notification.devices, outcomes) {
            switch outcome {
            case .rejected: rejected.append(device.pushkey)
            case .failed(let reason):
                failures.append(reason)
                if reason == .sourceShare { told(request.source, .share) }
                if case .deviceBudget = reason { told(request.source, .device) }
            case .delivered, .skipped, .dropped: break
            }
        }
        if !failures.isEmpty {
            // Never heard as a success: the finishes are written before the error is answered.
            if !dispatched.finishes.isEmpty { await dispatched.answered(heard: false).wait() }
            throw NotifyError.failed(failures, rejected: rejected)
        }
        var response = rejected.isEmpty ? Self.noneRejected : ServerResponse.json(.ok, ["rejected": .array(rejected.map(JSONValue.string))])
        // The access log shows it (docs/operations.md, "Once").
        if dispatched.repeats > 0 { response.headers.add(name: "Herald-Repeats", value: String(dispatched.repeats)) }
        // A 200 the homeserver hears ends its retries: the same notify sent again after it is sent
        // on purpose and is sent again. A 502, or a 200 it may not hear (written on a closed
        // connection, or late: a proxy in front may have given up on it and keep its connection
        // to Herald open), leaves the record to answer its retry (docs/operations.md, "Once").
        // With the record in PostgreSQL, the sent deliveries' finishes are written then too, in
        // one statement: nothing waits on the database between the upstream's answer and ours.
        if dispatched.hasAfterAnswer, let once = dispatcher.once {
            let clock = self.clock
            // The finishes' statement lands while the sender's next request on this connection is read.
            response.afterAnswer = { written in dispatched.answered(heard: written && once.heard(after: clock.now - start)) }
        }
        return response
    }
}
