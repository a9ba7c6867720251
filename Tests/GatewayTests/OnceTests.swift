import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import NIOCore
import Pushkins
import Testing

@testable import Gateway

/// A notify that the homeserver sends again, or that reaches two instances, is delivered once
/// (docs/operations.md, "Once"): what the fake APNs receives when a sender retries as Synapse does,
/// after a 5xx or a connection it gave up on.
@Suite(.serialized)
struct OnceTests {
    static let message = APNsEndToEndTests.message

    func notify(_ herald: RunningGateway, _ key: String, message: JSONObject = OnceTests.message) async throws -> TestResponse {
        try await herald.notify(notifyBody(message, devices: [APNsEndToEndTests().device(key)]))
    }

    /// Synapse's pusher: the same notify again until it is answered 200 (here without its
    /// backoff, the harshest case: every retry arrives while the first call is still under way).
    func notifyUntilAnswered(_ herald: RunningGateway, _ key: String, attempts: Int = 50) async throws -> [Int] {
        var statuses: [Int] = []
        for _ in 0..<attempts {
            let status = (try? await notify(herald, key))?.status ?? 0
            statuses.append(status)
            if status == 200 { break }
        }
        return statuses
    }

    /// The upstream accepts the push and stalls its answer past `answer_within`: the homeserver is
    /// answered 502 in time, retries, joins the call under way or reads its record, and the device
    /// gets the push once.
    @Test func aRepeatWhileTheUpstreamStallsIsNotSentTwice() async throws {
        let setup = try await APNsEndToEndTests().start(top: "notify:\n  answer_within: 0.2")
        let key = APNsEndToEndTests.pushkey()
        setup.apns.script(APNsEndToEndTests.hex(key), .delay(.seconds(1), then: .accept))
        let first = try await notify(setup.herald, key)
        let statuses = try await notifyUntilAnswered(setup.herald, key)
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(first.status == 502)
        #expect(first.json?["error"]?.stringValue?.contains("has not answered yet") == true)
        #expect(statuses.last == 200)
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)
        #expect(metrics.contains(#"herald_notify_repeats_suppressed_total{app="com.example.apns"}"#))
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
        let again = try await notify(setup.herald, key)
        await setup.stop()
        #expect(statuses == [502, 200])
        #expect(again.status == 200)  // answered from the record
        #expect(setup.apns.received(token: APNsEndToEndTests.hex(key)).map(\.status) == [500, 200])
    }

    /// A dead pushkey is remembered as rejected: the repeat gets the same answer, without a call.
    @Test func aRejectedPushkeyIsRejectedAgainWithoutASecondCall() async throws {
        let setup = try await APNsEndToEndTests().start()
        let key = APNsEndToEndTests.pushkey()
        setup.apns.script(APNsEndToEndTests.hex(key), .fail(410, "Unregistered"))
        let first = try await notify(setup.herald, key)
        let second = try await notify(setup.herald, key)
        await setup.stop()
        #expect(first.json == ["rejected": [.string(key)]])
        #expect(second.json == ["rejected": [.string(key)]])
        #expect(setup.apns.received.count == 1)
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
        #expect(MemoryDeliveryRecords(window: .seconds(60), takeover: .seconds(10), maxEntries: 100, maxBytes: 4096).maxEntries == 25)
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

    /// status-go sends a batch again when its answer was cut: each notification reaches each
    /// token once. Another `notif_id` is another notification.
    @Test func gorushSendsABatchSentAgainOnce() async throws {
        let setup = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true")
        let batch = #"{"notifications":[{"tokens":["0a0b0c","0d0e0f"],"platform":1,"message":"hi","data":{"chatId":"0x1"}}]}"#
        let first = try await setup.post("/api/push", Array(batch.utf8))
        let again = try await setup.post("/api/push", Array(batch.utf8))
        let other = batch.replacingOccurrences(of: #""platform":1"#, with: #""platform":1,"notif_id":"2""#)
        let third = try await setup.post("/api/push", Array(other.utf8))
        await setup.stop()
        #expect(first.status == 200 && again.status == 200 && third.status == 200)
        #expect(setup.apns.received.map(\.token).sorted() == ["0a0b0c", "0a0b0c", "0d0e0f", "0d0e0f"])
    }

    // MARK: a fleet on PostgreSQL

    /// Two gateways on one PostgreSQL record and one fake APNs.
    struct Fleet {
        let apns: FakeAPNs
        let instances: [RunningGateway]
        let url: String
        let directory: String
        let pki: TestPKI

        static func start(count: Int, answerWithin: Double = 20) async throws -> Fleet {
            let dir = temporaryDirectory()
            let pki = try TestPKI(directory: dir)
            let apns = try await FakeAPNs.start(pki: pki, topic: APNsEndToEndTests.topic, auth: try APNsTestKey(directory: dir).auth)
            let url = try await TestPostgres.createDatabase(prefix: "herald_once")
            var fleet = Fleet(apns: apns, instances: [], url: url, directory: dir, pki: pki)
            for _ in 0..<count { fleet = try await fleet.adding(answerWithin: answerWithin) }
            return fleet
        }

        func adding(answerWithin: Double = 20, shared: Bool = true) async throws -> Fleet {
            let apps = apnsApp(
                "com.example.apns", directory: directory, baseURL: apns.baseURL, caFile: pki.caFile, topic: APNsEndToEndTests.topic,
                extra: "retry_initial_backoff: 0.01")
            let herald = try await RunningGateway.start(
                gatewayYAML(
                    apps: apps,
                    extra:
                        "notify:\n  repeat_store: \(shared ? url : "memory")\n  answer_within: \(answerWithin)\n  repeat_store_timeout: 30")
            )
            return Fleet(apns: apns, instances: instances + [herald], url: url, directory: directory, pki: pki)
        }

        func stop() async {
            for instance in instances { await instance.stop() }
            await apns.stop()
        }
    }

    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func twoInstancesGivenTheSameNotifySendItOnce() async throws {
        let fleet = try await Fleet.start(count: 2)
        let key = APNsEndToEndTests.pushkey()
        let viaFirst = try await notify(fleet.instances[0], key)
        let viaSecond = try await notify(fleet.instances[1], key)
        // At once, while the first call stalls: one instance sends, the other is told to retry.
        let stalled = APNsEndToEndTests.pushkey()
        fleet.apns.script(APNsEndToEndTests.hex(stalled), .delay(.milliseconds(500), then: .accept))
        async let a = notify(fleet.instances[0], stalled)
        async let b = notify(fleet.instances[1], stalled)
        let both = try await [a.status, b.status]
        let retried = [
            try await notifyUntilAnswered(fleet.instances[1], stalled), try await notifyUntilAnswered(fleet.instances[0], stalled),
        ]
        await fleet.stop()
        #expect(viaFirst.status == 200 && viaSecond.status == 200)
        #expect(viaSecond.headers.first(name: "Herald-Repeats") == "1")
        #expect(fleet.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)
        #expect(both.contains(200) || both.contains(502), "\(both)")
        #expect(retried.allSatisfy { $0.last == 200 })
        #expect(fleet.apns.received(token: APNsEndToEndTests.hex(stalled)).count == 1)
    }

    /// The record outlives the instance: after a restart on the same PostgreSQL the repeat is
    /// still answered without a send. (The memory record is lost with its instance: the repeat of
    /// a notify answered just before a restart is sent again, as docs/operations.md says.)
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func theRecordOutlivesARestart() async throws {
        let fleet = try await Fleet.start(count: 1)
        let key = APNsEndToEndTests.pushkey()
        let before = try await notify(fleet.instances[0], key)
        await fleet.instances[0].stop()
        let restarted = try await Fleet(apns: fleet.apns, instances: [], url: fleet.url, directory: fleet.directory, pki: fleet.pki)
            .adding()
        let after = try await notify(restarted.instances[0], key)
        await restarted.instances[0].stop()
        #expect(before.status == 200 && after.status == 200)
        #expect(fleet.apns.received(token: APNsEndToEndTests.hex(key)).count == 1)

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

    /// The store's own rules on a real PostgreSQL: claimed, held by another instance, taken over
    /// once the claim is older than the takeover bound, recorded, expired after the window.
    @Test(.enabled(if: TestPostgres.url != nil, "needs HERALD_TEST_POSTGRES_URL"))
    func thePostgresRecordClaimsTakesOverAndExpires() async throws {
        var notify = GatewayConfig.Notify()
        notify.repeatWindow = .seconds(60)
        notify.repeatTakeover = .seconds(10)
        notify.repeatStoreTimeout = .seconds(30)
        let records = try PostgresDeliveryRecords(
            url: try await TestPostgres.createDatabase(prefix: "herald_once"), notify: notify, metrics: GatewayMetrics().factory,
            clock: SystemClock())
        let start = Date(timeIntervalSince1970: 2_000_000_000)
        let key = RepeatKey(["$e", "app", "pushkey"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await records.client.run() }
            #expect(try await records.claim(key, now: start) == .claimed)
            #expect(try await records.claim(key, now: start + 5) == .heldElsewhere)
            #expect(try await records.claim(key, now: start + 11) == .takenOver)  // its instance died
            try await records.finish(key, .rejected, now: start + 12)
            #expect(try await records.claim(key, now: start + 13) == .recorded(.rejected))
            #expect(try await records.claim(key, now: start + 73) == .claimed)  // the window passed
            try await records.finish(key, nil, now: start + 74)  // failed: released
            #expect(try await records.claim(key, now: start + 75) == .claimed)
            group.cancelAll()
        }
    }

    /// PostgreSQL down: notifies are still served, each instance's memory stands in, and
    /// `/health` and a metric say so.
    @Test func aRecordStoreThatIsDownFallsBackToMemory() async throws {
        let setup = try await APNsEndToEndTests().start(
            top: "notify:\n  repeat_store: postgres://postgres@127.0.0.1:1/none\n  repeat_store_timeout: 0.5")
        let key = APNsEndToEndTests.pushkey()
        let first = try await notify(setup.herald, key)
        let second = try await notify(setup.herald, key)
        let health = try await setup.herald.request(.GET, "/health")
        let metrics = try await setup.herald.metricsText()
        await setup.stop()
        #expect(first.status == 200 && second.status == 200)
        #expect(setup.apns.received.count == 1)  // the memory record stood in
        #expect(health.status == 200)
        #expect(health.json?["failing"]?["repeat_store"] != nil, "\(health.text)")
        #expect(metrics.contains("herald_notify_repeat_store_fallbacks_total"))
        #expect(metrics.contains(#"herald_component_failing{component="repeat_store"} 1"#))
    }
}
