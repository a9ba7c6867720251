import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

/// The one upstream-call path: attempts, classification, Retry-After, budget, metrics-free fakes.
@Suite struct UpstreamCallTests {
    /// Answers from a script, one per request; `nil` is a network error.
    final class ScriptedTransport: UpstreamTransport {
        struct Refused: Error {}
        private let script: Mutex<[UpstreamResponse?]>
        private let sent = Mutex<[UpstreamRequest]>([])

        init(_ answers: [UpstreamResponse?]) { script = Mutex(answers) }
        var requests: [UpstreamRequest] { sent.withLock { $0 } }

        func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
            sent.withLock { $0.append(request) }
            let next = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            guard let next else { throw Refused() }
            return next
        }
    }

    static func answer(_ status: Int, retryAfter: String? = nil) -> UpstreamResponse {
        var headers = HTTPHeaders()
        if let retryAfter { headers.add(name: "Retry-After", value: retryAfter) }
        return UpstreamResponse(status: status, headers: headers, body: ByteBuffer())
    }

    func call(
        _ transport: ScriptedTransport, maxAttempts: Int = 3, budget: Duration = .seconds(50), backoff: Duration = .milliseconds(1),
        clock: any HeraldClock = SystemClock()
    ) -> UpstreamCall {
        UpstreamCall(
            transport: transport,
            policy: RetryPolicy(maxAttempts: maxAttempts, initialBackoff: backoff, maxBackoff: backoff * 2, budget: budget),
            metrics: UpstreamMetrics(type: PushkinType("test"), pushkin: "p", factory: NOOPMetricsHandler.instance, clock: SystemClock()),
            clock: clock)
    }

    func classify(_ response: UpstreamResponse) -> UpstreamVerdict<DeviceOutcome> {
        switch response.status {
        case 200: return .done(.delivered)
        case 410: return .done(.rejected(reason: .pushService(status: 410)))
        case 401: return .renewCredential(.pushService(status: 401))
        default: return .retry(.pushService(status: response.status))
        }
    }

    let request = UpstreamRequest(url: "http://upstream.invalid/x", headers: HTTPHeaders(), body: nil)

    @Test func temporaryAnswersAreRetriedUntilOneIsDone() async {
        let transport = ScriptedTransport([Self.answer(503), nil, Self.answer(200)])
        let outcome = await call(transport).deliver(logger: Logger(label: "t")) { _ in
            request
        } classify: {
            classify($0)
        }
        #expect(outcome.outcome == .delivered)
        #expect(transport.requests.count == 3)
        #expect(outcome.note.attempts == 3)
    }

    @Test func exhaustedAttemptsFailWithTheLastReason() async {
        let transport = ScriptedTransport([Self.answer(503), Self.answer(500)])
        let outcome = await call(transport, maxAttempts: 2).deliver(logger: Logger(label: "t")) { _ in
            request
        } classify: {
            classify($0)
        }
        #expect(outcome.outcome == .failed(reason: .pushService(status: 500)))
        #expect(transport.requests.count == 2)
    }

    @Test func networkErrorsAreTemporaryAndNamedNetwork() async {
        let transport = ScriptedTransport([])
        let (result, note): (Result<DeviceOutcome, UpstreamCallFailure>, DeliveryNote) = await call(transport, maxAttempts: 2).run(
            logger: Logger(label: "t")
        ) {
            _ in
            request
        } classify: {
            classify($0)
        }
        guard case .failure(let failure) = result, case .network = failure.reason else {
            Issue.record("expected a network failure, got \(result)")
            return
        }
        #expect(failure.attempts == 2)
        #expect(note.attempts == 2)
        #expect(!failure.budgetSpent)
    }

    @Test func aRequestWithAnInvalidHeaderFieldFailsForGoodWithoutARetry() async {
        final class Refusing: UpstreamTransport {
            let attempts = Mutex(0)
            func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
                attempts.withLock { $0 += 1 }
                throw InvalidHeaderField(name: "topic")
            }
        }
        let transport = Refusing()
        let call = UpstreamCall(
            transport: transport, policy: RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(1), maxBackoff: .milliseconds(2)),
            metrics: UpstreamMetrics(type: PushkinType("test"), pushkin: "p", factory: NOOPMetricsHandler.instance, clock: SystemClock()),
            clock: SystemClock())
        let outcome = await call.deliver(logger: Logger(label: "t")) { _ in
            request
        } classify: {
            classify($0)
        }
        #expect(outcome.outcome == .failed(reason: .localError("\(InvalidHeaderField(name: "topic"))")))
        #expect(transport.attempts.withLock { $0 } == 1)
    }

    @Test func aRetryAfterBeyondTheBudgetStopsAtOnce() async {
        let transport = ScriptedTransport([Self.answer(429, retryAfter: "60"), Self.answer(200)])
        let (result, _): (Result<DeviceOutcome, UpstreamCallFailure>, DeliveryNote) = await call(transport, budget: .seconds(5)).run(
            logger: Logger(label: "t")
        ) { _ in
            request
        } classify: {
            classify($0)
        }
        #expect(result == .failure(UpstreamCallFailure(reason: .pushService(status: 429), attempts: 1, budgetSpent: true)))
        #expect(transport.requests.count == 1)
    }

    /// docs/architecture.md, "Time": the pause a `Retry-After` asks for is waited on the call's
    /// clock; with a manual clock the second attempt goes out when, and only when, it has passed.
    @Test func aRetryAfterIsWaitedOnTheCallsClock() async {
        let transport = ScriptedTransport([Self.answer(503, retryAfter: "30"), Self.answer(200)])
        let clock = ManualClock()
        let call = call(transport, budget: .seconds(60), backoff: .seconds(1), clock: clock)
        async let outcome = call.deliver(logger: Logger(label: "t")) { _ in
            request
        } classify: {
            classify($0)
        }
        #expect(await eventually { clock.sleepers == 1 })
        clock.advance(by: .seconds(29))
        #expect(clock.sleepers == 1)
        #expect(transport.requests.count == 1)
        clock.advance(by: .seconds(1))
        #expect(await outcome.outcome == .delivered)
        #expect(transport.requests.count == 2)
    }

    /// A `Retry-After` date is read against the call's wall clock (the manual clock's date is in
    /// January 2027: against the system's, this date would be far beyond the budget).
    @Test func aRetryAfterDateIsReadAgainstTheCallsWallClock() async {
        let clock = ManualClock(date: Date(timeIntervalSince1970: 1_800_000_000))  // Fri, 15 Jan 2027 08:00:00 GMT
        let transport = ScriptedTransport([Self.answer(503, retryAfter: "Fri, 15 Jan 2027 08:00:20 GMT"), Self.answer(200)])
        let call = call(transport, budget: .seconds(60), backoff: .seconds(1), clock: clock)
        async let outcome = call.deliver(logger: Logger(label: "t")) { _ in
            request
        } classify: {
            classify($0)
        }
        #expect(await eventually { clock.sleepers == 1 })
        clock.advance(by: .seconds(19))
        #expect(transport.requests.count == 1)
        clock.advance(by: .seconds(1))
        #expect(await outcome.outcome == .delivered)
        #expect(transport.requests.count == 2)
    }

    @Test func aPermanentPreparationErrorSendsNothing() async {
        let transport = ScriptedTransport([Self.answer(200)])
        let outcome = await call(transport).deliver(logger: Logger(label: "t")) { _ throws(UpstreamPreparationError) in
            throw .permanent(.localError("cannot sign"))
        } classify: {
            classify($0)
        }
        #expect(outcome.outcome == .failed(reason: .localError("cannot sign")))
        #expect(transport.requests.isEmpty)
    }

    /// Hands out "token-1", "token-2", …: a new one only after the one held was refused.
    final class CountingCredential: UpstreamCredential {
        let held = Mutex((number: 1, slot: RefusableValue()))
        let whatToCheck = "the test's key"
        func value() async throws(UpstreamPreparationError) -> String {
            held.withLock { h in
                if let value = h.slot.valid(at: Date(), margin: 0) { return value }
                let value = "token-\(h.number)"
                h.number += 1
                h.slot.store(value, expires: .distantFuture)
                return value
            }
        }
        func refuse(_ value: String) async -> CredentialRefusal { held.withLock { $0.slot.refuse(value) } }
    }

    @Test func aRefusedCredentialIsRenewedOnceAndTheRequestSentAgainWithIt() async {
        let transport = ScriptedTransport([Self.answer(401), Self.answer(200)])
        var prepared: [String?] = []
        let outcome = await call(transport).deliver(logger: Logger(label: "t"), credential: CountingCredential()) { _, token in
            prepared.append(token)
            return request
        } classify: {
            classify($0)
        }
        #expect(outcome.outcome == .delivered)
        #expect(prepared == ["token-1", "token-2"])
    }

    @Test func aCredentialRefusedTwiceFailsWithoutAThirdRequest() async {
        let transport = ScriptedTransport([Self.answer(401), Self.answer(401), Self.answer(200)])
        let outcome = await call(transport, maxAttempts: 5).deliver(logger: Logger(label: "t"), credential: CountingCredential()) {
            _, _ in
            request
        } classify: {
            classify($0)
        }
        #expect(outcome.outcome == .failed(reason: .pushService(status: 401)))
        #expect(transport.requests.count == 2)
    }

    /// Issue: a refused credential stayed cached when no attempt was left, so the next call sent it
    /// again. With one attempt, and with a spent budget, the next call takes a new value.
    @Test(arguments: [(1, Duration.seconds(50)), (3, Duration.zero)])
    func aRefusedCredentialIsDroppedEvenWhenNoAttemptIsLeft(_ maxAttempts: Int, _ budget: Duration) async {
        let transport = ScriptedTransport([Self.answer(401), Self.answer(200)])
        let credential = CountingCredential()
        let upstream = call(transport, maxAttempts: maxAttempts, budget: budget)
        var prepared: [String?] = []
        let first = await upstream.deliver(logger: Logger(label: "t"), credential: credential) { _, token in
            prepared.append(token)
            return request
        } classify: {
            classify($0)
        }
        let second = await upstream.deliver(logger: Logger(label: "t"), credential: credential) { _, token in
            prepared.append(token)
            return request
        } classify: {
            classify($0)
        }
        #expect(first.outcome == .failed(reason: .pushService(status: 401)))
        #expect(second.outcome == .delivered)
        #expect(prepared == ["token-1", "token-2"])
    }

    /// A value made to replace a refused one and refused too fails the call, and is dropped as
    /// well: the next call (a fixed key, a recovered provider) is sent with a new one.
    @Test func aCredentialRefusedAgainAfterItsRenewalIsDroppedToo() async {
        let transport = ScriptedTransport([Self.answer(401), Self.answer(401), Self.answer(200)])
        let credential = CountingCredential()
        let upstream = call(transport, maxAttempts: 3)
        var prepared: [String?] = []
        for _ in 0..<2 {
            _ = await upstream.deliver(logger: Logger(label: "t"), credential: credential) { _, token in
                prepared.append(token)
                return request
            } classify: {
                classify($0)
            }
        }
        #expect(prepared == ["token-1", "token-2", "token-3"])
        #expect(transport.requests.count == 3)
    }

    @Test func aValueRefusedAfterAnotherRequestReplacedItIsNotDroppedTwice() {
        var slot = RefusableValue()
        slot.store("a", expires: .distantFuture)
        #expect(slot.refuse("a") == .dropped)
        #expect(slot.refuse("a") == .alreadyReplaced)
        slot.store("b", expires: .distantFuture)
        #expect(slot.refuse("a") == .alreadyReplaced)
        #expect(slot.valid(at: Date(), margin: 0) == "b")
        #expect(slot.refuse("b") == .droppedAfterRenewal(firstInARow: true))
        slot.store("c", expires: .distantFuture)
        #expect(slot.refuse("c") == .droppedAfterRenewal(firstInARow: false))
        // A value that lived to its normal end ends the run: the next one is an ordinary value.
        slot.store("d", expires: Date(timeIntervalSince1970: 0))
        #expect(slot.valid(at: Date(), margin: 0) == nil)
        slot.store("e", expires: .distantFuture)
        #expect(slot.refuse("e") == .dropped)
    }

    @Test func aRenewalAskedWithoutACredentialFailsAtOnce() async {
        let transport = ScriptedTransport([Self.answer(401), Self.answer(200)])
        let outcome = await call(transport).deliver(logger: Logger(label: "t")) { _ in
            request
        } classify: {
            classify($0)
        }
        #expect(outcome.outcome == .failed(reason: .pushService(status: 401)))
        #expect(transport.requests.count == 1)
    }

    @Test func everyDocumentedAPNsReasonIsClassifiedAndOnlySygnalsDeadTokenPairsReject() {
        var rejected: [String] = []
        var dead: [String] = []
        for reason in APNsErrorReason.allCases {
            for status in [400, 403, 404, 405, 410, 413, 429, 500, 503] {
                let disposition = APNsDisposition.of(status: status, reason: reason)
                if case .done(.rejected) = disposition.verdict(.apns(status: status, reason)) {
                    rejected.append("\(status) \(reason.rawValue)")
                }
                if APNsReason(status: status, reason: reason).rejectionMeansDeadToken { dead.append("\(status) \(reason.rawValue)") }
            }
        }
        #expect(
            rejected.sorted() == [
                "400 BadDeviceToken", "400 DeviceTokenNotForTopic", "400 TopicDisallowed", "410 ExpiredToken", "410 Unregistered",
            ])
        // The one table also says which rejections mean the token is dead: not the app's topic.
        #expect(dead.sorted() == ["400 BadDeviceToken", "400 DeviceTokenNotForTopic", "410 ExpiredToken", "410 Unregistered"])
        #expect(APNsDisposition.of(status: 403, reason: .expiredProviderToken) == .renewCredential)
        #expect(APNsDisposition.of(status: 503, reason: nil) == .temporary)
        #expect(APNsDisposition.of(status: 400, reason: .badTopic) == .permanent)
        #expect(APNsDisposition.of(status: 200, reason: nil) == .delivered)
    }

    @Test func reasonLabelsAreBoundedAndDescriptionsReadable() {
        #expect(OutcomeReason.apns(status: 410, .unregistered).label == "Unregistered")
        #expect(OutcomeReason.apns(status: 418, nil).label == "http_418")
        #expect(OutcomeReason.fcm(status: 404, .unregistered).description == "FCM 404 UNREGISTERED")
        #expect(OutcomeReason.network("connection refused to 10.0.0.1").label == "network")
        #expect(OutcomeReason.invalidPushkey("anything at all").label == "invalid_pushkey")
    }
}

@Suite struct ConcurrencyPrimitiveTests {
    @Test func aCancelledWaiterLeavesTheLimiterQueue() async throws {
        let limiter = AsyncLimiter(limit: 1)
        try await limiter.acquire()
        let waiter = Task { try await limiter.acquire() }
        await eventually { limiter.waiting > 0 }
        #expect(limiter.waiting == 1)
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(limiter.waiting == 0)
        limiter.release()
        #expect(limiter.inUse == 0)  // the slot was not handed to the cancelled waiter
    }

    @Test func aReadinessGateReleasesWaitersWithItsValueOrError() async throws {
        let gate = ReadinessGate<Int>()
        async let early = gate.wait()
        gate.open(7)
        #expect(try await early == 7)
        #expect(try await gate.wait() == 7)
        #expect(gate.value == 7)

        struct Broken: Error {}
        let failing = ReadinessGate<Int>()
        failing.fail(Broken())
        await #expect(throws: Broken.self) { try await failing.wait() }
    }

    @Test func hexMatchesTheFormatterItReplaced() {
        #expect(Hex.encode([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(Hex.encode([]) == "")
    }
}

/// IANA's special-purpose registries, and IPv6 addresses that stand for IPv4 ones.
@Suite struct AddressClassTests {
    @Test(arguments: [
        "192.0.2.1", "198.51.100.7", "203.0.113.9", "192.88.99.1", "255.255.255.255", "100.64.0.1", "198.18.0.1",
        "::ffff:10.0.0.1", "::10.0.0.1", "::127.0.0.1", "64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b:1::1",
        "2002:0a00:0001::1", "2002:7f00:0001::", "2001:0:a00:1::1", "2001:0:4136:e378:8000:63bf:80ff:fffe",
        "2001:db8::1", "3fff::1", "100::1", "2001:2::1", "5f00::1", "fd00::1", "fe80::1", "ff02::1", "::", "::1",
    ])
    func nonPublicAddressesAreNotGlobal(_ address: String) {
        #expect(NetworkAddress.classify(literal: address) != .global, "\(address)")
    }

    @Test(arguments: [
        "8.8.8.8", "1.1.1.1", "64:ff9b::808:808", "2002:0808:0808::1", "2001:0:4136:e378:8000:63bf:f7f7:f7f7", "2606:4700::1111",
        "::ffff:8.8.8.8",
    ])
    func publicAddressesAreGlobal(_ address: String) {
        #expect(NetworkAddress.classify(literal: address) == .global, "\(address)")
    }
}

@Suite struct LogThrottleTests {
    @Test func aFloodOfOneKindOfLineIsCutAndTheNextLineSaysHowMuchWasLeftOut() {
        let throttle = LogThrottle(perInterval: 3, interval: .seconds(1), clock: SystemClock())
        let start = ContinuousClock.now
        let admitted = (0..<100).map { _ in throttle.admit("push failed", now: start) }
        #expect(admitted.prefix(3).allSatisfy { $0 == 0 })
        #expect(admitted.dropFirst(3).allSatisfy { $0 == nil })
        #expect(throttle.admit("another kind", now: start) == 0)  // kinds are counted apart
        #expect(throttle.admit("push failed", now: start + .seconds(1)) == 97)
        #expect(throttle.admit("push failed", now: start + .seconds(1)) == 0)
    }
}
