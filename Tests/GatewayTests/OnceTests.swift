import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldUpstream
import Logging
import NIOCore
import Pushkins
import Testing

@testable import DeliveryRecord
@testable import Gateway

/// A notify that the homeserver sends again, or that reaches two instances, is delivered once
/// (docs/operations.md, "Once"): what the fake APNs receives when a sender retries as Synapse does,
/// after a 5xx or a connection it gave up on.
@Suite(.serialized)
struct OnceTests {
    static let message = APNsEndToEndTests.message
    static var eventId: String { message["event_id"]?.stringValue ?? "" }

    func notify(_ herald: RunningGateway, _ key: String, message: JSONObject = OnceTests.message) async throws -> TestResponse {
        try await herald.notify(notifyBody(message, devices: [APNsEndToEndTests().device(key)]))
    }

    /// Synapse's pusher: the same notify again until it is answered 200 (here without its
    /// backoff, the harshest case: every retry arrives while the first call is still under way).
    /// A retry that joins the call under way waits for it until its own `answer_within`, so the
    /// attempts bound the wait at about `attempts × answer_within`, with room for a loaded machine.
    func notifyUntilAnswered(_ herald: RunningGateway, _ key: String, attempts: Int = 300) async throws -> [Int] {
        var statuses: [Int] = []
        for _ in 0..<attempts {
            let status = (try? await notify(herald, key))?.status ?? 0
            statuses.append(status)
            if status == 200 { break }
        }
        return statuses
    }

    /// A record key is the first 16 bytes of SHA-256 over the length-prefixed parts: instances of
    /// two releases share one PostgreSQL record during a rolling upgrade, so the digest may not
    /// change (the expected value is Python's `hashlib.sha256`).
    @Test func aRecordKeyIsTheDigestEveryReleaseRecords() {
        #expect(RepeatKey(["$e", "app", "pushkey"]).digest == "e6a3efdaabfdf455e0faf56746e40954")
        #expect(RepeatKey(["$e", "app", "pushke", "y"]).digest != RepeatKey(["$e", "app", "pushkey", ""]).digest)
        // A pusher's `data` is hashed as its JSON's bytes: the digest of the same text as a part.
        let data: JSONObject = ["url": "https://push.example/x", "format": "event_id_only"]
        let device = Device(appId: "app", pushkey: "pushkey", data: data)
        #expect(
            Dispatcher.key(event: "$e", device)
                == RepeatKey(["$e", "app", "pushkey", #"{"url":"https://push.example/x","format":"event_id_only"}"#]))
        #expect(
            Dispatcher.key(event: "$e", Device(appId: "app", pushkey: "pushkey", data: [:])) == RepeatKey(["$e", "app", "pushkey", "{}"]))
        #expect(Dispatcher.key(event: "$e", Device(appId: "app", pushkey: "pushkey")) == RepeatKey(["$e", "app", "pushkey", ""]))
    }

    /// The upstream accepts the push and stalls its answer past `answer_within` (on the
    /// test's clock): the homeserver is answered 502 in time, retries, joins the call under way, and the device
    /// gets the push once.
    @Test func aRepeatWhileTheUpstreamStallsIsNotSentTwice() async throws {
        let clock = ManualClock()
        let setup = try await APNsEndToEndTests().start(extra: Self.heldPastTheDeadline, clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let release = TestEvent()
        setup.apns.script(APNsEndToEndTests.hex(key), .hold(release, then: .accept))
        let first = try await notifyPastTheDeadline(setup, key, clock: clock)
        // Sent again while APNs still holds the push: the retry joins the call under way.
        async let retry = notify(setup.herald, key)
        let joined = await eventually(within: .seconds(60)) { (try? await Self.suppressed(setup.herald)) ?? 0 >= 1 }
        release.raise()
        let answered = try await retry
        await setup.stop()
        #expect(joined)
        #expect(first.status == 502)
        #expect(first.json?["error"]?.stringValue?.contains("has not answered yet") == true)
        #expect(answered.status == 200 && answered.headers.first(name: "Herald-Repeats") == "1")
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)
    }

    /// An APNs request timeout that outlasts the answer deadline (the product's 20 s), for the tests
    /// that hold a call while the manual clock passes it: the default request timeout (10 s) would
    /// end the held attempt at the same step, and the retry would be a second push.
    static let heldPastTheDeadline = "request_timeout: 60"
    static let answerWithin = Duration.seconds(20)

    /// `key`'s notify, answered at its deadline: once APNs has its push (the first since the token
    /// was scripted) and the notify's deadline is armed, `clock` moves past `answer_within`.
    func notifyPastTheDeadline(_ setup: APNsEndToEndTests.Setup, _ key: String, clock: ManualClock) async throws -> TestResponse {
        try await notifyPastTheDeadline(setup.herald, apns: setup.apns, key, clock: clock)
    }

    /// The same through `herald`, one instance of a fleet whose fake APNs is `apns`.
    func notifyPastTheDeadline(_ herald: RunningGateway, apns: FakeAPNs, _ key: String, clock: ManualClock) async throws
        -> TestResponse
    {
        async let response = notify(herald, key)
        let armed = await eventually(within: .seconds(60)) {
            apns.arrived(token: APNsEndToEndTests.hex(key)) >= 1 && clock.loopTimers(dueIn: Self.answerWithin) >= 1
        }
        #expect(armed)
        clock.advance(by: Self.answerWithin)
        return try await response
    }

    /// The repeats answered without a send (joined or read from the record), all apps together.
    static func suppressed(_ herald: RunningGateway) async throws -> Double {
        PushbackTests.value(in: try await herald.metricsText(), of: "herald_notify_repeats_suppressed_total", labels: []) ?? 0
    }

    /// The homeserver gives up on the connection before Herald answers (its timeout, a load
    /// balancer's) and sends the notify again: the retry joins the call under way and is answered
    /// with its outcome; one push reaches the device.
    @Test func aRetryAfterTheSenderClosedTheConnectionJoinsTheCallUnderWay() async throws {
        let setup = try await APNsEndToEndTests().start()
        let key = APNsEndToEndTests.pushkey()
        setup.apns.script(APNsEndToEndTests.hex(key), .delay(.seconds(1), then: .accept))
        let url = setup.herald.base + "/_matrix/push/v1/notify"
        let body = JSONWriter.serialize(notifyBody(Self.message, devices: [APNsEndToEndTests().device(key)]))
        // The sender gives up (its connection closed) once the push is with the upstream.
        let reachedUpstream = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                var request = HTTPClientRequest(url: url)
                request.method = .POST
                request.body = .bytes(ByteBuffer(bytes: body))
                return (try? await HTTPClient.shared.execute(request, timeout: .seconds(60))) != nil
            }
            let reached = await eventually(within: .seconds(30)) { setup.apns.maxConcurrentRequests >= 1 }
            group.cancelAll()
            return reached
        }
        let retry = try await notify(setup.herald, key)
        await setup.stop()
        #expect(reachedUpstream)
        #expect(retry.status == 200)
        #expect(retry.headers.first(name: "Herald-Repeats") == "1")
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)
    }

    /// A delivery that failed leaves no record: the retry is sent again, and delivered once.
    @Test func aRetryAfterARealFailureIsSentAgain() async throws {
        let setup = try await APNsEndToEndTests().start(extra: "max_attempts: 1")
        let key = APNsEndToEndTests.pushkey()
        setup.apns.script(APNsEndToEndTests.hex(key), .sequence([.fail(500, "InternalServerError"), .accept]))
        let statuses = try await notifyUntilAnswered(setup.herald, key)
        await setup.stop()
        #expect(statuses == [502, 200])
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).map(\.status) == [500, 200])
    }

    /// The upstream answers after `answer_within`: the homeserver is answered 502 while the call
    /// goes on; its retry, once the call is over, is answered from the record (one push), and so is
    /// the same notify sent after that retry's 200: a retry's answer is never taken as heard.
    @Test func aNotifyAnsweredAtTheDeadlineIsAnsweredFromTheRecordOnEveryRetry() async throws {
        let clock = ManualClock()
        let setup = try await APNsEndToEndTests().start(extra: Self.heldPastTheDeadline, clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let token = APNsEndToEndTests.hex(key)
        let release = TestEvent()
        setup.apns.script(token, .sequence([.hold(release, then: .accept), .accept]))
        let first = try await notifyPastTheDeadline(setup, key, clock: clock)
        release.raise()
        // The call finished and its outcome is recorded (nothing of this event is under way).
        let settled = await eventually(within: .seconds(60)) {
            let trace = try? await setup.herald.deliveries(event: Self.eventId)
            return trace?.first?["outcome"]?.stringValue == "delivered"
        }
        let retry = try await notify(setup.herald, key)
        let again = try await notify(setup.herald, key)
        await setup.stop()
        #expect(first.status == 502)
        #expect(settled)
        #expect(retry.status == 200 && retry.headers.first(name: "Herald-Repeats") == "1")
        #expect(again.status == 200 && again.headers.first(name: "Herald-Repeats") == "1")
        #expect(setup.apns.received(token: token).count == 1)
    }

    /// A dead pushkey whose rejection the homeserver did not hear (answered at the deadline) is
    /// rejected again on its retries, without a second call.
    @Test func aRejectionTheSenderDidNotHearIsRejectedAgainWithoutASecondCall() async throws {
        let clock = ManualClock()
        let setup = try await APNsEndToEndTests().start(extra: Self.heldPastTheDeadline, clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let release = TestEvent()
        setup.apns.script(
            APNsEndToEndTests.hex(key), .sequence([.hold(release, then: .fail(410, "Unregistered")), .fail(410, "Unregistered")]))
        let first = try await notifyPastTheDeadline(setup, key, clock: clock)
        // Sent again while APNs holds the push (joins it), and once more after its rejection.
        async let joined = notify(setup.herald, key)
        let joining = await eventually(within: .seconds(60)) { (try? await Self.suppressed(setup.herald)) ?? 0 >= 1 }
        release.raise()
        let whileHeld = try await joined
        let retry = try await notify(setup.herald, key)
        await setup.stop()
        #expect(joining)
        #expect(first.status == 502)
        #expect(whileHeld.json == ["rejected": [.string(key)]])
        #expect(retry.json == ["rejected": [.string(key)]])
        #expect(retry.headers.first(name: "Herald-Repeats") == "1")
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)
    }

    /// A retry that joins the call under way and is answered at once, well within
    /// `notify.heard_within`, does not make the delivery heard: its sender missed one answer
    /// already, and behind a loaded proxy its patience may run out again before this one reaches
    /// it (`LoadBalancerRepeatsTests` once pushed an event twice so). The same notify sent after it
    /// is answered from the record.
    @Test func aRetrysQuickAnswerIsNotTakenAsHeard() async throws {
        let clock = ManualClock()
        let setup = try await APNsEndToEndTests().start(clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let token = APNsEndToEndTests.hex(key)
        let release = TestEvent()
        setup.apns.script(token, .sequence([.hold(release, then: .accept), .accept]))
        async let first = notify(setup.herald, key)
        let reached = await eventually(within: .seconds(60)) { setup.apns.maxConcurrentRequests >= 1 }
        clock.advance(by: .seconds(3))  // the first answer will be written late: not heard
        async let retry = notify(setup.herald, key)
        let joined = await eventually(within: .seconds(60)) {
            let metrics = (try? await setup.herald.metricsText()) ?? ""
            return (PushbackTests.value(in: metrics, of: "herald_notify_repeats_suppressed_total", labels: []) ?? 0) >= 1
        }
        release.raise()
        let answered = try await first
        let repeated = try await retry
        let again = try await notify(setup.herald, key)
        await setup.stop()
        #expect(reached && joined)
        #expect(answered.status == 200)
        #expect(repeated.status == 200 && repeated.headers.first(name: "Herald-Repeats") == "1")
        #expect(again.status == 200 && again.headers.first(name: "Herald-Repeats") == "1")
        #expect(setup.apns.received(token: token).count == 1)
    }

    /// Element's push troubleshooter posts the same notify, with the constant event id
    /// `$THIS_IS_A_FAKE_EVENT_ID`, each time a user runs it: each is answered 200 on an open
    /// connection, so each is a push of its own.
    @Test func theTroubleshootersNotifySentThreeTimesArrivesThreeTimes() async throws {
        let setup = try await APNsEndToEndTests().start()
        let key = APNsEndToEndTests.pushkey()
        var message = Self.message
        message["event_id"] = "$THIS_IS_A_FAKE_EVENT_ID"
        var answers: [TestResponse] = []
        for _ in 0..<3 { answers.append(try await notify(setup.herald, key, message: message)) }
        await setup.stop()
        #expect(answers.map(\.status) == [200, 200, 200])
        #expect(answers.allSatisfy { $0.headers.first(name: "Herald-Repeats") == nil })
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).count == 3)
    }

    /// The notify's 200 is written `elapsed` after the request arrived (the gateway's clock is
    /// moved while the upstream holds its answer). Written within `notify.heard_within` (2 s) it
    /// was heard, and the same notify sent after it is sent again; written later, a proxy in
    /// front may have given up on it and kept its connection to Herald open (HAProxy without
    /// `option abortonclose`), so the same notify is a retry, answered from the record.
    @Test(arguments: [(elapsed: 1, pushes: 2), (elapsed: 3, pushes: 1)])
    func aTwoHundredWrittenLateIsNotTakenAsHeard(_ elapsed: Int, _ pushes: Int) async throws {
        let clock = ManualClock()
        let setup = try await APNsEndToEndTests().start(clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let token = APNsEndToEndTests.hex(key)
        let release = TestEvent()
        setup.apns.script(token, .sequence([.hold(release, then: .accept), .accept]))
        async let first = notify(setup.herald, key)
        let reached = await eventually(within: .seconds(60)) { setup.apns.maxConcurrentRequests >= 1 }
        clock.advance(by: .seconds(elapsed))
        release.raise()
        let answered = try await first
        let again = try await notify(setup.herald, key)
        await setup.stop()
        #expect(reached)
        #expect(answered.status == 200)
        #expect(again.status == 200)
        #expect(again.headers.first(name: "Herald-Repeats") == (pushes == 1 ? "1" : nil))
        #expect(setup.apns.received(token: token).count == pushes)
    }

    /// A test push (`$THIS_IS_A_FAKE_EVENT_ID`) is never answered from the record, even when its
    /// answer came too late to count as heard: each run of the troubleshooter is a push.
    @Test func aTestPushAnsweredLateIsStillSentAgain() async throws {
        let clock = ManualClock()
        let setup = try await APNsEndToEndTests().start(clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let token = APNsEndToEndTests.hex(key)
        var message = Self.message
        message["event_id"] = .string(Once.testPushEventId)
        let release = TestEvent()
        setup.apns.script(token, .sequence([.hold(release, then: .accept), .accept]))
        async let first = notify(setup.herald, key, message: message)
        let reached = await eventually(within: .seconds(60)) { setup.apns.maxConcurrentRequests >= 1 }
        clock.advance(by: .seconds(5))
        release.raise()
        let answered = try await first
        let again = try await notify(setup.herald, key, message: message)
        await setup.stop()
        #expect(reached)
        #expect(answered.status == 200 && again.status == 200)
        #expect(again.headers.first(name: "Herald-Repeats") == nil)
        #expect(setup.apns.received(token: token).count == 2)
    }

    /// Element X registers a pusher per account with the phone's one token and a per-account
    /// secret in `default_payload`: two accounts in one room get the same event for the same
    /// pushkey, each with its own `data`. Both are pushed, each with its own secret; each sent
    /// again after a cut answer is still pushed once.
    @Test func twoPushersWithOnePushkeyAndDifferentDataGetTwoPushes() async throws {
        let clock = ManualClock()
        let setup = try await APNsEndToEndTests().start(extra: Self.heldPastTheDeadline, clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let token = APNsEndToEndTests.hex(key)
        let accounts: [JSONObject] = [["default_payload": ["cs": "account-one"]], ["default_payload": ["cs": "account-two"]]]
        var answers: [TestResponse] = []
        for data in accounts {
            let device: JSONValue = ["app_id": "com.example.apns", "pushkey": .string(key), "data": .object(data)]
            answers.append(try await setup.herald.notify(notifyBody(Self.message, devices: [device])))
        }
        // The second account's notify of another event, its answer cut by the deadline this time.
        let release = TestEvent()
        setup.apns.script(token, .hold(release, then: .accept))
        var third = Self.message
        third["event_id"] = "$third"
        let device: JSONValue = ["app_id": "com.example.apns", "pushkey": .string(key), "data": .object(accounts[1])]
        async let cut = setup.herald.notify(notifyBody(third, devices: [device]))
        let armed = await eventually(within: .seconds(60)) {
            setup.apns.arrived(token: token) >= 1 && clock.loopTimers(dueIn: Self.answerWithin) >= 1
        }
        clock.advance(by: Self.answerWithin)
        let cutStatus = try await cut.status
        release.raise()
        let retried = try await setup.herald.notify(notifyBody(third, devices: [device]))
        await setup.stop()
        #expect(armed)
        #expect(answers.map(\.status) == [200, 200])
        #expect(answers.allSatisfy { $0.headers.first(name: "Herald-Repeats") == nil })
        let secrets = setup.apns.received(token: token).compactMap { $0.payload?["cs"]?.stringValue }
        #expect(secrets == ["account-one", "account-two", "account-two"])
        #expect(cutStatus == 502)
        #expect(retried.status == 200 && retried.headers.first(name: "Herald-Repeats") == "1")
    }

    /// Badge updates carry no event: each is sent. `repeat_window: 0` sends every repeat.
    @Test func withoutAnEventOrWithoutAWindowEveryNotifyIsSent() async throws {
        let badge: JSONObject = ["counts": ["unread": 3]]
        let setup = try await APNsEndToEndTests().start()
        let key = APNsEndToEndTests.pushkey()
        _ = try await notify(setup.herald, key, message: badge)
        _ = try await notify(setup.herald, key, message: badge)
        await setup.stop()
        #expect(setup.apns.received.count == 2)

        let off = try await APNsEndToEndTests().start(top: "notify:\n  repeat_window: 0")
        _ = try await notify(off.herald, key)
        _ = try await notify(off.herald, key)
        await off.stop()
        #expect(off.apns.received.count == 2)
    }

    /// The memory record: bounded in entries, forgotten after the window, lost on restart.
    @Test func theMemoryRecordIsBoundedAndExpires() {
        let records = MemoryDeliveryRecords(window: .seconds(60), takeover: .seconds(10), maxEntries: 3, maxBytes: 1 << 20)
        let start = Date(timeIntervalSince1970: 1_000_000)
        let keys = (0..<5).map { RepeatKey(["e\($0)", "app", "k"]) }
        for key in keys {
            #expect(records.claim(key, now: start) == .claimed)
            records.finish(key, .delivered, now: start)
        }
        #expect(records.count == 3)  // the two oldest went
        #expect(records.claim(keys[0], now: start) == .claimed)
        #expect(records.claim(keys[4], now: start) == .recorded(.delivered))
        // A claim whose instance died is taken over after the takeover bound.
        #expect(records.claim(keys[0], now: start + 5) == .heldElsewhere)
        #expect(records.claim(keys[0], now: start + 11) == .takenOver)
        #expect(records.claim(keys[4], now: start + 61) == .claimed)  // the window passed
        records.finish(keys[4], .delivered, now: start + 61)
        records.heard([keys[4]], now: start + 62)  // its answer was heard: a repeat is sent again
        #expect(records.claim(keys[4], now: start + 63) == .claimed)
        #expect(MemoryDeliveryRecords(window: .seconds(60), takeover: .seconds(10), maxEntries: 100, maxBytes: 1000).maxEntries == 25)
    }

    /// A Mastodon server that retries after a timeout sends the same message (the same body and
    /// salt to the same path): relayed once, and answered 201 both times.
    @Test func theRelaySendsAMessageSentAgainOnce() async throws {
        let setup = try await RelayEndToEndTests().start()
        let (headers, body, _, _) = try RelayEndToEndTests.vector("aesgcm")
        let path = "/relay-to/production/\(RelayEndToEndTests.token)/acct-42"
        let first = try await setup.send(path, headers: headers, body: body)
        let again = try await setup.send(path, headers: headers, body: body)
        await setup.stop()
        #expect(first.status == 201 && again.status == 201)
        #expect(setup.production.received.count == 1)
    }

    /// status-go's push server sends, for each new message, the same notification (the stock
    /// client never sets the encrypted message) and no `notif_id`: three consecutive messages of
    /// one chat are three pushes. A batch with `notif_id`s sent again after a cut answer reaches
    /// each token once; another `notif_id` is another notification.
    @Test func gorushSendsEveryNotificationWithoutANotifIdAndOneWithItOnce() async throws {
        let setup = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true")
        let statusGo = #"""
            {"notifications":[{"tokens":["0a0b0c"],"platform":1,"message":"You have a new message","topic":"im.status.ethereum","content_available":true,"sound":"default","priority":"high","push_type":"alert","data":{"encryptedMessage":"0x","chatId":"0x04ab","publicKey":"0x04cd","deepLink":"status-app://p/0x04cd"}}]}
            """#
        var consecutive: [TestResponse] = []
        for _ in 0..<3 { consecutive.append(try await setup.post("/api/push", Array(statusGo.utf8))) }
        let batch =
            #"{"notifications":[{"tokens":["0d0e0f","101112"],"platform":1,"message":"hi","notif_id":"7","data":{"chatId":"0x1"}}]}"#
        let first = try await setup.post("/api/push", Array(batch.utf8))
        let again = try await setup.post("/api/push", Array(batch.utf8))
        let other = batch.replacingOccurrences(of: #""notif_id":"7""#, with: #""notif_id":"8""#)
        let third = try await setup.post("/api/push", Array(other.utf8))
        await setup.stop()
        #expect(consecutive.map(\.status) == [200, 200, 200])
        #expect(consecutive.allSatisfy { $0.json?["counts"] == 1 })
        #expect(setup.apns.received.filter { $0.token == "0a0b0c" }.count == 3)
        #expect(first.status == 200 && again.status == 200 && third.status == 200)
        #expect(setup.apns.received.map(\.token).filter { $0 != "0a0b0c" }.sorted() == ["0d0e0f", "0d0e0f", "101112", "101112"])
    }

    /// gorush's API in `sync` mode on a PostgreSQL record of its own, and that record.
    static func gorushSyncOnPostgres() async throws -> (StatusEndToEndTests.Setup, PostgresDeliveryRecords) {
        let url = try await TestPostgres.createDatabase(prefix: "herald_once")
        let setup = try await StatusEndToEndTests().start(
            statusExtra: "  gorush:\n    sync: true\nnotify:\n  repeat_store: \(url)")
        return (setup, try #require(setup.herald.gateway.onceSetup.once.guardian?.store as? PostgresDeliveryRecords))
    }

    /// gorush's notifications take the keyed path a Matrix notify's devices take: on PostgreSQL a
    /// notification of ten tokens with a `notif_id` is claimed in one statement and finished in
    /// one more (it was twenty, a claim and a finish per token), and the same batch sent again
    /// costs its claim alone and reaches no token twice.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aGorushNotificationOfTenTokensCostsTwoStatements() async throws {
        let (setup, records) = try await Self.gorushSyncOnPostgres()
        let tokens = (0..<10).map { _ in APNsEndToEndTests.hex(APNsEndToEndTests.pushkey()) }
        let batch = """
            {"notifications":[{"tokens":[\(tokens.map { "\"\($0)\"" }.joined(separator: ","))],"platform":1,"message":"hi","notif_id":"n-\(UUID().uuidString)"}]}
            """
        let before = records.statements.current
        let first = try await setup.post("/api/push", Array(batch.utf8))
        // The finish is written once the answer is: the claim's statement and the finish's, in all.
        let finished = await eventually(within: .seconds(60)) { records.statements.current - before >= 2 }
        let forTen = records.statements.current - before
        let again = try await setup.post("/api/push", Array(batch.utf8))
        let forTheRepeat = records.statements.current - before - forTen
        await setup.stop()
        #expect(first.status == 200 && again.status == 200)
        #expect(finished && forTen == 2, "statements for a gorush notification of ten tokens: \(forTen)")
        #expect(forTheRepeat == 1, "statements for the same notification again: \(forTheRepeat)")
        #expect(tokens.allSatisfy { token in setup.apns.received.filter { $0.token == token }.count == 1 })
    }

    /// A synchronous gorush request's notifications are sent together, as gorush's workers send
    /// them, not one after another: with APNs holding the first one's push, the second one's
    /// reaches it (sent one after another, the others reach APNs only once the first one's call
    /// has timed out, and it fails). On PostgreSQL the request's ten notifications cost one claim
    /// statement and one finish (they cost a claim each).
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aSynchronousGorushRequestsNotificationsAreSentTogetherInTwoStatements() async throws {
        let (setup, records) = try await Self.gorushSyncOnPostgres()
        let tokens = (0..<10).map { _ in APNsEndToEndTests.hex(APNsEndToEndTests.pushkey()) }
        let notifications = tokens.enumerated().map { #"{"tokens":["\#($1)"],"platform":1,"message":"hi","notif_id":"s-\#($0)"}"# }
        let batch = #"{"notifications":["# + notifications.joined(separator: ",") + "]}"
        let release = TestEvent()
        setup.apns.script(tokens[0], .hold(release, then: .accept))
        let before = records.statements.current
        async let answer = setup.post("/api/push", Array(batch.utf8))
        let togetherWhileHeld = await eventually(within: .seconds(60)) {
            tokens.dropFirst().allSatisfy { setup.apns.arrived(token: $0) == 1 }
        }
        release.raise()
        let first = try await answer
        let finished = await eventually(within: .seconds(60)) { records.statements.current - before >= 2 }
        let statements = records.statements.current - before
        await setup.stop()
        #expect(togetherWhileHeld, "the other notifications waited for the first one's push")
        #expect(first.status == 200 && first.json?["logs"] == [])
        #expect(finished && statements == 2, "statements: \(statements)")
        #expect(tokens.allSatisfy { token in setup.apns.received.filter { $0.token == token }.count == 1 })
    }

    // MARK: a fleet on PostgreSQL

    /// Two gateways on one PostgreSQL record and one fake APNs.
    struct Fleet {
        let apns: FakeAPNs
        let instances: [RunningGateway]
        let url: String
        let directory: String
        let pki: TestPKI
        /// The instances' clock: a manual one moves their answer deadlines.
        var clock: any HeraldClock = SystemClock()

        static func start(count: Int, answerWithin: Double = 20, clock: any HeraldClock = SystemClock()) async throws -> Fleet {
            let dir = temporaryDirectory()
            let pki = try TestPKI(directory: dir)
            let apns = try await FakeAPNs.start(pki: pki, topic: APNsEndToEndTests.topic, auth: try APNsTestKey(directory: dir).auth)
            let url = try await TestPostgres.createDatabase(prefix: "herald_once")
            var fleet = Fleet(apns: apns, instances: [], url: url, directory: dir, pki: pki, clock: clock)
            for _ in 0..<count { fleet = try await fleet.adding(answerWithin: answerWithin) }
            return fleet
        }

        /// An instance on the fleet's record (its calls may be held past the answer deadline).
        func adding(answerWithin: Double = 20, shared: Bool = true) async throws -> Fleet {
            let apps = apnsApp(
                "com.example.apns", directory: directory, baseURL: apns.baseURL, caFile: pki.caFile, topic: APNsEndToEndTests.topic,
                extra: "retry_initial_backoff: 0.01\n" + OnceTests.heldPastTheDeadline)
            let herald = try await RunningGateway.start(
                gatewayYAML(
                    apps: apps,
                    extra:
                        "notify:\n  repeat_store: \(shared ? url : "memory")\n  answer_within: \(answerWithin)"),
                clock: clock)
            return Fleet(apns: apns, instances: instances + [herald], url: url, directory: directory, pki: pki, clock: clock)
        }

        func stop() async {
            for instance in instances { await instance.stop() }
            await apns.stop()
        }
    }

    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func twoInstancesGivenTheSameNotifySendItOnce() async throws {
        let clock = ManualClock()
        let fleet = try await Fleet.start(count: 2, clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let token = APNsEndToEndTests.hex(key)
        // Answered at the deadline by the first instance, retried through the second once the
        // call is over: answered from the fleet's record.
        let release = TestEvent()
        fleet.apns.script(token, .hold(release, then: .accept))
        let viaFirst = try await notifyPastTheDeadline(fleet.instances[0], apns: fleet.apns, key, clock: clock)
        release.raise()
        let settled = await delivered(key, seenFrom: fleet.instances[1])
        let viaSecond = try await notify(fleet.instances[1], key)
        // At once, while the first call stalls: one instance sends, the other is told to retry
        // (502, held elsewhere); the sender answers 502 at its deadline; the retry, once the call
        // is over, is answered from the record.
        let stalled = APNsEndToEndTests.pushkey()
        let stalledToken = APNsEndToEndTests.hex(stalled)
        let releaseStalled = TestEvent()
        fleet.apns.script(stalledToken, .hold(releaseStalled, then: .accept))
        let answered = AtomicCounter()
        func answer(_ herald: RunningGateway) async throws -> Int {
            let status = try await notify(herald, stalled).status
            _ = answered.add(1)
            return status
        }
        async let a = answer(fleet.instances[0])
        async let b = answer(fleet.instances[1])
        // The clock passes the deadline only once both claims are answered (one sent, the other
        // answered held elsewhere): a claim's statement still in flight would time out on the
        // same clock, and its instance would send from its own memory record.
        let bothArmed = await eventually(within: .seconds(60)) {
            fleet.apns.arrived(token: stalledToken) >= 1 && answered.current == 1
                && clock.loopTimers(dueIn: Self.answerWithin) >= 1
        }
        clock.advance(by: Self.answerWithin)
        let both = try await [a, b].sorted()
        releaseStalled.raise()
        let settledToo = await delivered(stalled, seenFrom: fleet.instances[0])
        let retried = try await notify(fleet.instances[1], stalled)
        await fleet.stop()
        #expect(bothArmed)
        #expect(settled && settledToo)
        #expect(viaFirst.status == 502 && viaSecond.status == 200)
        #expect(viaSecond.headers.first(name: "Herald-Repeats") == "1")
        #expect(fleet.apns.received(token: token).count == 1)
        #expect(both == [502, 502], "\(both)")
        #expect(retried.status == 200 && retried.headers.first(name: "Herald-Repeats") == "1")
        #expect(fleet.apns.received(token: stalledToken).count == 1)
    }

    /// Whether `herald`'s trace shows the delivery of the test's event to `key` delivered (waited
    /// for: the event is the call's end, which the record holds).
    func delivered(_ key: String, seenFrom herald: RunningGateway) async -> Bool {
        let pushkey = key.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? key
        return await eventually(within: .seconds(60)) {
            (try? await herald.deliveries(event: Self.eventId, query: "&pushkey=\(pushkey)"))?.first?["outcome"]?.stringValue
                == "delivered"
        }
    }

    /// The record outlives the instance: after a restart on the same PostgreSQL the repeat is
    /// still answered without a send. (The memory record is lost with its instance: the repeat of
    /// a notify answered just before a restart is sent again, as docs/operations.md says.)
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func theRecordOutlivesARestart() async throws {
        let clock = ManualClock()
        let fleet = try await Fleet.start(count: 1, clock: clock)
        let key = APNsEndToEndTests.pushkey()
        let token = APNsEndToEndTests.hex(key)
        // Answered at the deadline: the homeserver did not hear the outcome, and retries after
        // the restart (the shutdown waits for the call, which records it).
        let release = TestEvent()
        fleet.apns.script(token, .hold(release, then: .accept))
        let before = try await notifyPastTheDeadline(fleet.instances[0], apns: fleet.apns, key, clock: clock)
        release.raise()
        await fleet.instances[0].stop()
        let restarted = try await Fleet(
            apns: fleet.apns, instances: [], url: fleet.url, directory: fleet.directory, pki: fleet.pki, clock: clock
        ).adding()
        let after = try await notify(restarted.instances[0], key)
        await restarted.instances[0].stop()
        #expect(before.status == 502 && after.status == 200)
        #expect(after.headers.first(name: "Herald-Repeats") == "1")
        #expect(fleet.apns.received(token: token).count == 1)

        let other = APNsEndToEndTests.pushkey()
        let base = Fleet(apns: fleet.apns, instances: [], url: fleet.url, directory: fleet.directory, pki: fleet.pki)
        let memory = try await base.adding(shared: false)
        _ = try await notify(memory.instances[0], other)
        await memory.instances[0].stop()
        let again = try await base.adding(shared: false)
        _ = try await notify(again.instances[0], other)
        await again.instances[0].stop()
        await fleet.apns.stop()
        #expect(fleet.apns.received(token: APNsEndToEndTests.hex(other)).count == 2)
    }

    /// docs/operations.md, "Once": with the record in PostgreSQL a notify of ten new devices costs
    /// two statements (its claims before the send, its finishes after the answer, with whether it
    /// was heard), and concurrent notifies share theirs. Its 200 was heard, so the same notify sent
    /// again is sent again (on purpose, not a retry).
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func aNotifyOfTenDevicesCostsTwoStatementsAndConcurrentNotifiesShareThem() async throws {
        let fleet = try await Fleet.start(count: 1)
        let herald = fleet.instances[0]
        let records = try #require(herald.gateway.onceSetup.once.guardian?.store as? PostgresDeliveryRecords)
        let keys = (0..<10).map { _ in APNsEndToEndTests.pushkey() }
        var message = OnceTests.message
        message["event_id"] = .string("$ten-\(UUID().uuidString)")
        let body = notifyBody(message, devices: keys.map { APNsEndToEndTests().device($0) })
        let before = records.statements.current
        let first = try await herald.notify(body)
        // The finishes are written once the answer is: the record shows them when it has.
        await eventually { records.statements.current - before >= 2 }
        let forTen = records.statements.current - before
        let repeated = try await herald.notify(body)
        // Twenty notifies of one device each, all at once.
        let concurrentStart = records.statements.current
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<20 {
                var one = OnceTests.message
                one["event_id"] = .string("$many-\(n)-\(UUID().uuidString)")
                let device = APNsEndToEndTests().device(APNsEndToEndTests.pushkey())
                group.addTask { try await herald.notify(notifyBody(one, devices: [device])).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        await eventually { fleet.apns.received.count >= 40 }
        await eventually { records.statements.current - concurrentStart >= 2 }
        let forTwenty = records.statements.current - concurrentStart
        await fleet.stop()
        #expect(first.status == 200 && repeated.status == 200)
        #expect(forTen == 2, "statements for a notify of ten devices: \(forTen)")
        #expect(repeated.headers.first(name: "Herald-Repeats") == nil)
        #expect(keys.allSatisfy { fleet.apns.received(token: APNsEndToEndTests.hex($0)).count == 2 })
        #expect(answers == [Int](repeating: 200, count: 20))
        #expect(forTwenty <= 40, "statements for twenty concurrent notifies: \(forTwenty)")
        print("OnceTests: twenty concurrent notifies of one device made \(forTwenty) statements")
    }

    /// Expired rows are deleted by the record's sweeper, a service that waits on the gateway's
    /// clock (docs/operations.md, "Once"), never by a notify: a row whose record and trace both ran
    /// out goes at the next sweep, one still kept stays.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func theSweeperDeletesExpiredRowsOnTheClock() async throws {
        let clock = ManualClock()
        let records = try await Self.postgresRecords(clock: clock)
        let count = { @Sendable () async throws -> Int in
            var total = 0
            for try await n in try await records.pool.client.query("SELECT count(*)::int8 FROM herald_deliveries", logger: Self.logger)
                .decode(Int.self)
            {
                total = n
            }
            return total
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await records.pool.run() }
            let (old, young) = (RepeatKey(["$old"]), RepeatKey(["$young"]))
            _ = try await records.claim(key: old, trace: nil, instance: "a", now: clock.date)
            try await records.finish(key: old, .delivered, trace: nil, now: clock.date)
            _ = try await records.claim(key: young, trace: nil, instance: "a", now: clock.date + 100)
            try await records.finish(key: young, .delivered, trace: nil, now: clock.date + 100)
            #expect(try await count() == 2)
            group.addTask { try await PostgresDeliveryRecords.Sweeper(records: records).run() }
            await eventually { clock.sleepers > 0 }
            #expect(try await count() == 2)  // nothing before the interval passes
            clock.advance(by: PostgresDeliveryRecords.sweepInterval + .seconds(10))
            #expect(await eventually { (try? await count()) == 1 })
            group.cancelAll()
        }
    }

    static let logger = Logger(label: "test")

    /// A PostgreSQL record in a database of its own: a 60 s window, a 10 s takeover, a patient timeout.
    static func postgresRecords(clock: any HeraldClock) async throws -> PostgresDeliveryRecords {
        var notify = RecordSettings()
        notify.repeatWindow = .seconds(60)
        notify.repeatTakeover = .seconds(10)
        notify.repeatStoreTimeout = .seconds(30)
        return try PostgresDeliveryRecords(
            url: try await TestPostgres.createDatabase(prefix: "herald_once"), notify: notify, metrics: GatewayMetrics().factory,
            clock: clock)
    }

    /// A Status or ADAMANT delivery is traced without a claim (their stores keep their repeats):
    /// a row of its own that one instance writes and another reads, by event or by device, never
    /// a record a claim is answered from; written again, it is replaced.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func anUnclaimedDeliverysTraceIsTheFleetsAndNeverARecord() async throws {
        var notify = RecordSettings()
        notify.repeatStoreTimeout = .seconds(30)
        let url = try await TestPostgres.createDatabase(prefix: "herald_once")
        let writer = try PostgresDeliveryRecords(url: url, notify: notify, metrics: GatewayMetrics().factory, clock: SystemClock())
        let reader = try PostgresDeliveryRecords(url: url, notify: notify, metrics: GatewayMetrics().factory, clock: SystemClock())
        let start = Date()
        let trace = TraceStart(eventId: "0x09", frontEnd: "status", appId: "im.status.ios", pushkey: "abcdef0123456789")
        let dead = TraceEnd(outcome: .rejected(reason: .invalidPushkey("Unregistered")), note: DeliveryNote())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await writer.pool.run() }
            group.addTask { await reader.pool.run() }
            try await writer.trace(trace, dead, startedAt: start, instance: "a", now: start + 1)
            try await writer.trace(trace, dead, startedAt: start + 2, instance: "a", now: start + 3)
            let byEvent = try await reader.deliveries(DeliveryQuery(eventId: "0x09"), now: start + 4)
            let byDevice = try await reader.deliveries(DeliveryQuery(eventId: nil, pushkey: "abcdef0123456789"), now: start + 4)
            let otherDevice = try await reader.deliveries(DeliveryQuery(eventId: nil, pushkey: "other"), now: start + 4)
            #expect(byEvent.count == 1 && byEvent == byDevice && otherDevice.isEmpty)
            #expect(byEvent.first?.frontEnd == "status" && byEvent.first?.state == .rejected && byEvent.first?.instance == "a")
            #expect(byEvent.first?.startedAt.timeIntervalSince1970 == (start + 2).timeIntervalSince1970)
            // The Matrix delivery of the same words is claimed as new: the trace is no record.
            let key = RepeatKey(["0x09", "im.status.ios", "abcdef0123456789"])
            #expect(try await reader.claim(key: key, trace: nil, instance: "b", now: start + 5) == .claimed)
            group.cancelAll()
        }
    }

    /// The store's own rules on a real PostgreSQL: claimed, held by another instance, taken over
    /// once the claim is older than the takeover bound, recorded, expired after the window.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func thePostgresRecordClaimsTakesOverAndExpires() async throws {
        let records = try await Self.postgresRecords(clock: SystemClock())
        let start = Date(timeIntervalSince1970: 2_000_000_000)
        let key = RepeatKey(["$e", "app", "pushkey"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await records.pool.run() }
            let trace = TraceStart(eventId: "$e", appId: "app", pushkey: "pushkey")
            #expect(try await records.claim(key: key, trace: trace, instance: "a", now: start) == .claimed)
            #expect(try await records.claim(key: key, trace: trace, instance: "b", now: start + 5) == .heldElsewhere)
            #expect(try await records.claim(key: key, trace: trace, instance: "b", now: start + 11) == .takenOver)  // its instance died
            let rejected = TraceEnd(
                outcome: .rejected(reason: .invalidPushkey("gone")), note: DeliveryNote(attempts: 2, providerId: "id-1", target: "fid"))
            try await records.finish(key: key, .rejected, trace: rejected, now: start + 12)
            #expect(try await records.claim(key: key, trace: trace, instance: "b", now: start + 13) == .recorded(.rejected))
            let traced = try await records.deliveries(DeliveryQuery(eventId: "$e", pushkey: "pushkey"), now: start + 13)
            #expect(traced.map(\.state) == [.rejected])
            #expect(traced.first?.instance == "b" && traced.first?.attempts == 2 && traced.first?.providerId == "id-1")
            #expect(traced.first?.target == "fid")
            #expect(traced.first?.pushkey == "pushke…")
            #expect(try await records.deliveries(DeliveryQuery(eventId: "$e", pushkey: "other"), now: start + 13).isEmpty)
            #expect(try await records.claim(key: key, trace: trace, instance: "a", now: start + 73) == .claimed)  // the window passed
            // Heard: a repeat is claimed (sent again); the trace stays.
            try await records.finish([RecordFinish(key, .delivered, trace: nil)], heard: true, now: start + 74)
            #expect(try await records.claim(key: key, trace: trace, instance: "a", now: start + 75) == .claimed)
            #expect(try await records.deliveries(DeliveryQuery(eventId: "$e"), now: start + 75).map(\.state) == [.inFlight])
            // Failed (held by pushback): released, its trace kept.
            try await records.finish(
                key: key, nil, trace: TraceEnd(outcome: .failed(reason: .pushback(seconds: 5)), note: DeliveryNote()), now: start + 78)
            #expect(try await records.deliveries(DeliveryQuery(eventId: "$e", appId: "app"), now: start + 78).map(\.state) == [.held])
            #expect(try await records.claim(key: key, trace: trace, instance: "a", now: start + 79) == .claimed)
            group.cancelAll()
        }
    }

    /// PostgreSQL down: notifies are still served, each instance's memory stands in, and
    /// `/health` and a metric say so.
    @Test func aRecordStoreThatIsDownFallsBackToMemory() async throws {
        let clock = ManualClock()
        // Port 1 refuses the connection: the record's check at start finds it, and the record is
        // skipped from the first notify on (the pool keeps trying, and a claim through it would
        // wait its `repeat_store_timeout`).
        let setup = try await APNsEndToEndTests().start(
            extra: Self.heldPastTheDeadline, top: "notify:\n  repeat_store: postgres://postgres@127.0.0.1:1/none", clock: clock)
        let checked = await eventually { (try? await setup.herald.request(.GET, "/health"))?.text.contains("repeat_store") == true }
        #expect(checked)
        let key = APNsEndToEndTests.pushkey()
        // Answered at the deadline (the upstream holds the push): its retry is answered from this
        // instance's memory.
        let release = TestEvent()
        setup.apns.script(APNsEndToEndTests.hex(key), .hold(release, then: .accept))
        async let answer = notify(setup.herald, key)
        let armed = await eventually {
            setup.apns.arrived(token: APNsEndToEndTests.hex(key)) >= 1 && clock.loopTimers(dueWithin: Self.answerWithin) >= 1
        }
        #expect(armed)
        clock.advance(by: Self.answerWithin)
        let first = try await answer
        release.raise()
        let settled = await delivered(key, seenFrom: setup.herald)
        let second = try await notify(setup.herald, key)
        let health = try await setup.herald.request(.GET, "/health")
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(first.status == 502 && settled && second.status == 200)
        #expect(second.headers.first(name: "Herald-Repeats") == "1")
        #expect(setup.apns.received.count == 1)  // the memory record stood in
        #expect(health.status == 200)
        #expect(health.json?["failing"]?["repeat_store"] != nil, "\(health.text)")
        #expect(metrics.contains("herald_notify_repeat_store_fallbacks_total"))
        #expect(metrics.contains(#"herald_component_failing{component="repeat_store"} 1"#))
    }

    /// A finish handed to a PostgreSQL record that no claim has reached (it was unreachable from
    /// the start, so the memory record took every claim) fails at once and says so, rather than
    /// that the database did not answer in time: the memory record then takes the finish too.
    @Test func aFinishBeforeAnyClaimReachedTheRecordSaysItIsNotSetUp() async throws {
        let records = try PostgresDeliveryRecords(
            url: "postgres://postgres@127.0.0.1:1/none", notify: RecordSettings(), metrics: GatewayMetrics().factory,
            clock: ManualClock())
        let finish = RecordFinish(RepeatKey(["$event", "com.example.app", "pushkey"]), .delivered)
        let result = await withCheckedContinuation { (answered: CheckedContinuation<Result<Void, any Error>, Never>) in
            records.finish([finish], heard: false, now: Date()) { answered.resume(returning: $0) }
        }
        guard case .failure(let error) = result else {
            Issue.record("a finish with no table landed")
            return
        }
        #expect(error is PostgresDeliveryRecords.NotSetUp)
        #expect("\(error)" == "the PostgreSQL record is not set up yet (no claim has reached it)")
        #expect(records.statements.current == 0)
    }
}

/// The delivery record on a PostgreSQL that stops answering without closing its connections (its
/// processes stopped, as a node lost behind a failover): after the first operation that waits out
/// `repeat_store_timeout`, the record is skipped (each instance's memory stands in at once) but for
/// one probe at a time; `/health` names it; once the database answers again, the record is used again.
@Suite(.serialized) struct SilentRecordTests {
    @Test(
        .enabled(if: ThrowawayPostgres.available && TestPostgres.url != nil, "needs root and PostgreSQL's server"),
        .timeLimit(.minutes(2)))
    func aSilentRecordCostsOneTimeoutNotOnePerNotify() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        // A frozen PostgreSQL is silent in real time, so the record's timeout is 5 s here (1 s by
        // default): a loaded machine's delays stay well inside it.
        let setup = try await APNsEndToEndTests().start(
            top: "notify:\n  repeat_store: \(postgres.url)\n  repeat_store_timeout: 5")
        let once = OnceTests()
        let warm = APNsEndToEndTests.pushkey()
        #expect(try await once.notify(setup.herald, warm).status == 200)
        try postgres.freeze()
        var statuses: [Int] = []
        let keys = (0..<10).map { _ in APNsEndToEndTests.pushkey() }
        for key in keys { statuses.append(try await once.notify(setup.herald, key).status) }
        let during = try await setup.herald.request(.GET, "/health")
        let skipped = PushbackTests.value(
            in: try await setup.herald.metricsText(), of: "herald_component_skipped_total", labels: [#"component="repeat_store""#])
        try postgres.thaw()
        // The next notifies probe the record until it answers; then it is used again.
        let recovered = await eventually(within: .seconds(60)) {
            _ = try? await once.notify(setup.herald, APNsEndToEndTests.pushkey())
            return (try? await setup.herald.request(.GET, "/health"))?.json?["failing"]?["repeat_store"] == nil
        }
        await setup.stop()
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(keys.allSatisfy { setup.apns.received(token: APNsEndToEndTests.hex($0)).count == 1 })
        #expect(during.json?["failing"]?["repeat_store"] != nil, "\(during.text)")
        // Ten notifies of two record operations each (the claim, and the finish with whether the
        // answer was heard): none but the first was tried (the probes run beside them).
        #expect((skipped ?? 0) >= 19, "\(String(describing: skipped))")
        #expect(recovered)
    }

    /// gorush's `sync` mode answers before its pushes' finishes are written, as a notify does:
    /// with the database stopped once APNs has the push, status-go is answered at once (the
    /// record's timeout runs on a clock that does not move). Once the database answers again the
    /// finish lands, in one statement for the request's two notifications as their claim was, and
    /// the same batch again is answered from the record without a second push.
    @Test(
        .enabled(if: ThrowawayPostgres.available && TestPostgres.url != nil, "needs root and PostgreSQL's server"),
        .timeLimit(.minutes(3)))
    func gorushsSynchronousAnswerDoesNotWaitForItsFinishes() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let clock = ManualClock()
        let setup = try await StatusEndToEndTests().start(
            statusExtra: "  gorush:\n    sync: true", top: "notify:\n  repeat_store: \(postgres.url)\n", clock: clock)
        let records = try #require(setup.herald.gateway.onceSetup.once.guardian?.store as? PostgresDeliveryRecords)
        let tokens = (0..<2).map { _ in APNsEndToEndTests.hex(APNsEndToEndTests.pushkey()) }
        let batch = """
            {"notifications":[\(tokens.enumerated().map { #"{"tokens":["\#($1)"],"platform":1,"message":"hi","notif_id":"n-\#($0)"}"# }.joined(separator: ","))]}
            """
        let release = TestEvent()
        setup.apns.script(tokens[1], .hold(release, then: .accept))
        let answered = AtomicCounter()
        func push() async throws -> Int {
            let status = try await setup.post("/api/push", Array(batch.utf8)).status
            _ = answered.add(1)
            return status
        }
        let before = records.statements.current
        async let first = push()
        // The claims are written: APNs has the second push. The database stops before the finishes.
        #expect(await eventually(within: .seconds(60)) { setup.apns.arrived(token: tokens[1]) >= 1 })
        try postgres.freeze()
        release.raise()
        let answeredWhileStopped = await eventually(within: .seconds(60)) { answered.current == 1 }
        try postgres.thaw()
        let status = try await first
        let again = try await setup.post("/api/push", Array(batch.utf8))
        let statements = records.statements.current - before
        await setup.stop()
        #expect(answeredWhileStopped, "gorush's synchronous answer waited for its finishes")
        #expect(status == 200 && again.status == 200)
        #expect(tokens.allSatisfy { token in setup.apns.received.filter { $0.token == token }.count == 1 })
        // The request's claims and its finishes, a statement each; the repeat's claims, answered
        // from the record.
        #expect(statements == 3, "statements: \(statements)")
    }

    /// The relay's 201 is written before its finish, as a notify's 200 is (docs/operations.md,
    /// "Once"): with the database stopped once APNs has the message, the sender is answered at
    /// once, and nothing times out (the record's timeout runs on a clock that does not move). Once
    /// the database answers again the finish lands, and the same message sent again is answered
    /// from the record without a second push.
    @Test(
        .enabled(if: ThrowawayPostgres.available && TestPostgres.url != nil, "needs root and PostgreSQL's server"),
        .timeLimit(.minutes(3)))
    func theRelaysAnswerDoesNotWaitForItsFinish() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let clock = ManualClock()
        let setup = try await RelayEndToEndTests().start(top: "notify:\n  repeat_store: \(postgres.url)\n", clock: clock)
        let records = try #require(setup.herald.gateway.onceSetup.once.guardian?.store as? PostgresDeliveryRecords)
        let (headers, body, _, _) = try RelayEndToEndTests.vector("aesgcm")
        let path = "/relay-to/production/\(RelayEndToEndTests.token)/acct-42"
        let release = TestEvent()
        setup.production.script(RelayEndToEndTests.token, .hold(release, then: .accept))
        let answered = AtomicCounter()
        func relay() async throws -> Int {
            let status = try await setup.send(path, headers: headers, body: body).status
            _ = answered.add(1)
            return status
        }
        let before = records.statements.current
        async let first = relay()
        // The claim is written: APNs has the message. The database stops before the finish.
        #expect(await eventually(within: .seconds(60)) { setup.production.arrived(token: RelayEndToEndTests.token) >= 1 })
        try postgres.freeze()
        release.raise()
        let answeredWhileStopped = await eventually(within: .seconds(60)) { answered.current == 1 }
        try postgres.thaw()
        let status = try await first
        let again = try await setup.send(path, headers: headers, body: body)
        let statements = records.statements.current - before
        await setup.stop()
        #expect(answeredWhileStopped, "the relay's answer waited for its finish")
        #expect(status == 201 && again.status == 201)
        #expect(setup.production.received.count == 1)
        // The claim, the finish, and the repeat's claim, answered from the record.
        #expect(statements == 3, "statements: \(statements)")
    }
}
