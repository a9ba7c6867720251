import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import Logging
import Testing

@testable import Gateway

/// Pushback honoured for the whole upstream origin (docs/operations.md, "Pushback"): after a 429
/// (or a 503 with `Retry-After`) no request reaches that origin until the hold it asked for ends;
/// the devices for it fail at once as temporary (429 with `Retry-After` when nothing else failed:
/// docs/compatibility/matrix.md), and the hold is named in `/health` and
/// counted. The time is a manual clock's: the test moves it past the hold.
@Suite(.serialized)
struct PushbackTests {
    static let message = APNsEndToEndTests.message

    func fcmApp(_ key: String, _ fcm: FakeFCM, extra: String = "") -> String {
        """
          \(key):
            type: gcm
            api_version: v1
            project_id: \(fcm.projectId)
            service_account_file: \(fcm.serviceAccountFile)
            base_url: \(fcm.baseURL)
            retry_initial_backoff: 0.01
            retry_max_backoff: 0.05
        \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

        """
    }

    func fcmNotify(_ herald: InMemoryGateway, app: String, token: String, event: String = "$e") async throws -> TestResponse {
        var message = Self.message
        message["event_id"] = .string(event)
        return try await herald.notify(notifyBody(message, devices: [["app_id": .string(app), "pushkey": .string(token)]]))
    }

    /// FCM answers one notify 429 with `Retry-After: 5`: the next 50 notifies for the same project
    /// within the hold send nothing and are answered 429 with the hold's `Retry-After` (Element
    /// X's troubleshooter says "rate limited, try later"); another project is not held; the first
    /// call, which waited the hold out, and the first notify after the hold are delivered.
    @Test func anFCMProjectThatAnswers429IsHeldForTheTimeItAsked() async throws {
        let held = try await FakeFCM.start(directory: temporaryDirectory())
        let other = try await FakeFCM.start(directory: temporaryDirectory())
        held.script("first", .sequence([.quotaExceeded(retryAfter: "5"), .accept]))
        let clock = ManualClock(date: Date())
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: fcmApp("com.example.held", held) + fcmApp("com.example.other", other)), clock: clock)
        async let first = fcmNotify(herald, app: "com.example.held", token: "first")
        let holding = await eventually(within: .seconds(60)) {
            (await herald.request(.GET, "/health")).json?["held"] != nil
        }
        var during: [Int] = []
        var answers: [TestResponse] = []
        for n in 0..<50 {
            let answer = try await fcmNotify(herald, app: "com.example.held", token: "during-\(n)", event: "$d\(n)")
            during.append(answer.status)
            answers.append(answer)
        }
        let elsewhere = try await fcmNotify(herald, app: "com.example.other", token: "elsewhere")
        let health = await herald.request(.GET, "/health")
        let trace = try await herald.deliveries(event: "$d0")
        clock.advance(by: .seconds(5))
        let firstAnswer = try await first
        let after = try await fcmNotify(herald, app: "com.example.held", token: "after", event: "$after")
        let metrics = try await herald.metricsText()
        await herald.stop()
        await held.stop()
        await other.stop()
        #expect(holding)
        #expect(during.allSatisfy { $0 == 429 }, "\(during)")
        let firstHeld = try #require(answers.first)
        #expect(firstHeld.headers.first(name: "Retry-After") == "5")
        #expect(firstHeld.json?["errcode"] == "M_LIMIT_EXCEEDED" && firstHeld.json?["retry_after_ms"] == 5000)
        #expect(firstHeld.json?["rejected"] == [])
        #expect(held.received.filter { $0.tokens.contains { $0.hasPrefix("during-") } }.isEmpty)
        #expect(held.received.flatMap(\.tokens) == ["first", "first", "after"])
        #expect(elsewhere.status == 200 && other.received.flatMap(\.tokens) == ["elsewhere"])
        #expect(firstAnswer.status == 200)
        #expect(after.status == 200)
        let holds = try #require(health.json?["held"]?.arrayValue)
        #expect(holds.count == 1)
        #expect(holds.first?["pushkin"]?.stringValue == "com.example.held" && holds.first?["origin_class"]?.stringValue == "fcm")
        #expect(health.text.contains("127.0.0.1") == false)
        #expect(trace.first?["outcome"]?.stringValue == "held" && trace.first?["attempts"] == 0)
        #expect(
            Self.value(
                in: metrics, of: "herald_upstream_pushback_seconds_total", labels: ["pushkin=\"com.example.held\"", "origin_class=\"fcm\""])
                == 5)
    }

    /// The notify's answer when devices failed: 429 only when every failure is a pause with a
    /// known end (the longest pause, rounded up, at least a second); a mixed failure stays 502.
    @Test func aNotifyIs429OnlyWhenEveryFailureIsAPause() {
        let limited = NotifyError.failed([.pushback(seconds: 3), .inflightLimit, .pushback(seconds: 7)], rejected: ["k"])
        let response = MatrixErrors().render(limited)
        #expect(response.status == .tooManyRequests)
        #expect(response.headers.first(name: "Retry-After") == "7")
        let body = try? JSONParser.parse(response.body.readableBytesView)
        #expect(body?["errcode"] == "M_LIMIT_EXCEEDED" && body?["retry_after_ms"] == 7000 && body?["rejected"] == ["k"])
        #expect(MatrixErrors().render(NotifyError.failed([.pushback(seconds: 0)], rejected: [])).headers.first(name: "Retry-After") == "1")
        for mixed in [[OutcomeReason.pushback(seconds: 3), .network("reset")], [.answerDeadline], [.heldElsewhere, .inflightLimit]] {
            let answer = MatrixErrors().render(NotifyError.failed(mixed, rejected: []))
            #expect(answer.status == .badGateway && answer.headers.first(name: "Retry-After") == nil, "\(mixed)")
        }
    }

    /// The value of the series of `name` whose labels include `labels`, in a Prometheus exposition.
    static func value(in exposition: String, of name: String, labels: [String]) -> Double? {
        for line in exposition.split(separator: "\n") where line.hasPrefix(name + "{") && labels.allSatisfy({ line.contains($0) }) {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    /// A 429 without `Retry-After` holds for the app's `retry_initial_backoff`, doubled by each
    /// such answer in a row, at most `pushback_max`; `pushback_max: 0` holds nothing.
    @Test func a429WithoutRetryAfterHoldsForADoublingBackoffBoundedByPushbackMax() async throws {
        let clock = ManualClock(date: Date())
        let holds = UpstreamHolds(clock: clock, metrics: GatewayMetrics().factory, logger: Logger(label: "test"))
        let backoff = {
            holds.pushedBack("o", pushkin: "p", originClass: "fcm", retryAfter: nil, initial: .seconds(1), maximum: .seconds(3))
        }
        #expect(backoff() == .seconds(1))
        clock.advance(by: .seconds(1))
        #expect(holds.remaining("o") == nil)
        #expect(backoff() == .seconds(2))
        clock.advance(by: .seconds(2))
        #expect(backoff() == .seconds(3))  // 4, bounded
        #expect(holds.remaining("o") == .seconds(3))
        clock.advance(by: .seconds(3))
        holds.answered("o")  // an answer without pushback: the backoff starts anew
        #expect(backoff() == .seconds(1))
        #expect(holds.current.map(\.pushkin) == ["p"])

        let dir = temporaryDirectory()
        let fcm = try await FakeFCM.start(directory: dir)
        fcm.script("a", .sequence([.quotaExceeded(retryAfter: "5"), .accept]))
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: fcmApp("com.example.gcm", fcm, extra: "pushback_max: 0\nretry_budget: 0")), clock: clock)
        let refused = try await fcmNotify(herald, app: "com.example.gcm", token: "a")
        let next = try await fcmNotify(herald, app: "com.example.gcm", token: "b", event: "$b")
        await herald.stop()
        await fcm.stop()
        #expect(refused.status == 502 && next.status == 200)
        #expect(fcm.received.flatMap(\.tokens) == ["a", "b"])
    }

    /// A push service's pushback holds its origin, not the other push services of the app.
    @Test func aWebPushOriginsHoldDoesNotHoldAnotherOrigin() async throws {
        let one = try await FakeWebPushService.start()
        let two = try await FakeWebPushService.start()
        let clock = ManualClock(date: Date())
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: webpushApp("com.example.webpush", directory: temporaryDirectory(), extra: "retry_budget: 1")), clock: clock)
        let pushedBack = one.subscribe("a", behavior: .respond(status: 429, retryAfter: "30"))
        let sameOrigin = one.subscribe("b")
        let otherOrigin = two.subscribe("c")
        let web = WebPushEndToEndTests()
        var answers: [Int] = []
        for (n, subscription) in [pushedBack, sameOrigin, otherOrigin].enumerated() {
            var message = Self.message
            message["event_id"] = .string("$w\(n)")
            answers.append(try await herald.notify(notifyBody(message, devices: [web.device(subscription)])).status)
        }
        let health = await herald.request(.GET, "/health")
        await herald.stop()
        await one.stop()
        await two.stop()
        // The push service's own 429 is its answer (502); the next device, held, is told to wait.
        #expect(answers == [502, 429, 200])
        #expect(one.received.count == 1 && one.received(for: sameOrigin).isEmpty)
        #expect(two.received(for: otherOrigin).count == 1)
        #expect(health.json?["held"]?.arrayValue?.first?["origin_class"]?.stringValue == "other")
    }

    /// APNs keeps its per-token 429 (Apple's `TooManyRequests` is about one device): another
    /// device of the app is sent at once.
    @Test func apnsTooManyRequestsHoldsNoOrigin() async throws {
        let setup = try await APNsEndToEndTests().start(extra: "retry_budget: 0")
        let (a, b) = (APNsEndToEndTests.pushkey(), APNsEndToEndTests.pushkey())
        setup.apns.script(APNsEndToEndTests.hex(a), .fail(429, "TooManyRequests"))
        let first = try await setup.herald.notify(notifyBody(Self.message, devices: [APNsEndToEndTests().device(a)]))
        let second = try await setup.herald.notify(notifyBody(Self.message, devices: [APNsEndToEndTests().device(b)]))
        let health = try await setup.herald.request(.GET, "/health")
        await setup.stop()
        #expect(first.status == 502 && second.status == 200)
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(b)).count == 1)
        #expect(health.json?["held"] == nil)
    }
}
