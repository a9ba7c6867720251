import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import NIOCore
import Synchronization
import Testing

@testable import Gateway
@testable import HeraldUpstream
@testable import Pushkins

/// Declarative Web Push (docs/compatibility/webpush.md, "Declarative Web Push") and the VAPID
/// subject Apple's push service can resolve ("VAPID subject"): what the fake push service
/// decrypts, and what `check-config` refuses.
@Suite struct DeclarativeWebPushTests {
    static let navigate = "declarative_navigate: https://app.example.org/#/room/{room_id}"

    func start(_ extra: String) async throws -> WebPushEndToEndTests.Setup {
        try await WebPushEndToEndTests().start(appExtra: "declarative: true\n" + extra)
    }

    @Test func aDeclarativeAppsMessageCarriesANotificationABrowserShowsByItself() async throws {
        let setup = try await start(Self.navigate)
        let sub = setup.service.subscribe()
        let response = try await setup.herald.notify(
            notifyBody(APNsEndToEndTests.message, devices: [WebPushEndToEndTests().device(sub)]))
        await setup.stop()
        #expect(response.json == ["rejected": []])
        let received = try #require(setup.service.received.first)
        #expect(received.problems.isEmpty, "\(received.problems)")
        let payload = try #require(received.payload)
        #expect(payload["web_push"] == 8030)
        #expect(payload["mutable"] == true)
        #expect(
            payload["notification"] == [
                "title": "Mission Control", "body": "Major Tom: I'm floating in a most peculiar way.",
                "navigate": "https://app.example.org/#/room/%21slw48wfj34rtnrf%3Aexample.org", "tag": "!slw48wfj34rtnrf:example.org",
                "app_badge": 2,
            ])
        // What a service worker reads stays where it was.
        #expect(payload["room_id"] == "!slw48wfj34rtnrf:example.org")
        #expect(payload["event_id"] == "$3957tyerfgewrf384")
        #expect(payload["content"]?["body"] == "I'm floating in a most peculiar way.")
    }

    /// A badge update (counts, no event, no room) has nothing to show: a declarative app's
    /// subscription would show "New message" for it and open an empty room. It is not sent
    /// (answered as not rejected); with `declarative_badge_updates: true` it is sent silent, with
    /// the app's room-less title and its start URL.
    @Test func aBadgeUpdateIsNotDressedAsANotification() async throws {
        let badge: JSONObject = ["counts": ["unread": 5]]
        let setup = try await start(Self.navigate)
        let sub = setup.service.subscribe()
        let skipped = try await setup.herald.notify(notifyBody(badge, devices: [WebPushEndToEndTests().device(sub)]))
        let message = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [WebPushEndToEndTests().device(sub)]))
        await setup.stop()
        #expect(skipped.status == 200 && skipped.json == ["rejected": []])
        #expect(message.status == 200)
        #expect(setup.service.received.map(\.declarative) == [true])  // the message only

        let sending = try await start(Self.navigate + "\ndeclarative_badge_updates: true\ndeclarative_title: Chat")
        let other = sending.service.subscribe()
        let sent = try await sending.herald.notify(notifyBody(badge, devices: [WebPushEndToEndTests().device(other)]))
        await sending.stop()
        #expect(sent.status == 200)
        let received = try #require(sending.service.received.first)
        #expect(received.problems.isEmpty, "\(received.problems)")
        #expect(received.declarative)
        #expect(
            received.payload?["notification"] == ["title": "Chat", "navigate": "https://app.example.org/", "silent": true, "app_badge": 5])
    }

    @Test func aLowPriorityNotificationIsSilentAndWithoutContentHasNoBody() async throws {
        let setup = try await start(Self.navigate)
        let sub = setup.service.subscribe()
        let notification: JSONObject = ["event_id": "$e", "room_id": "!r:x", "sender": "@a:x", "prio": "low", "counts": ["unread": 0]]
        _ = try await setup.herald.notify(notifyBody(notification, devices: [WebPushEndToEndTests().device(sub)]))
        await setup.stop()
        let received = try #require(setup.service.received.first)
        #expect(received.problems.isEmpty, "\(received.problems)")
        #expect(
            received.payload?["notification"] == [
                "title": "@a:x", "navigate": "https://app.example.org/#/room/%21r%3Ax", "tag": "!r:x", "app_badge": 0, "silent": true,
            ])
    }

    /// A message over one record's limit is shortened from its longest strings, as any Web Push
    /// message is; the declarative fields stay valid.
    @Test func aLongMessageIsShortenedInsideTheLimit() async throws {
        let setup = try await start(Self.navigate)
        let sub = setup.service.subscribe()
        var message = APNsEndToEndTests.message
        message["room_name"] = .string(String(repeating: "R", count: 3000))
        message["sender_display_name"] = .string(String(repeating: "S", count: 1500))
        _ = try await setup.herald.notify(notifyBody(message, devices: [WebPushEndToEndTests().device(sub)]))
        await setup.stop()
        let received = try #require(setup.service.received.first)
        #expect(received.problems.isEmpty, "\(received.problems)")
        #expect(received.body.count <= 4096)
        let title = try #require(received.payload?["notification"]?["title"]?.stringValue)
        #expect(title == String(repeating: "R", count: 99) + "…")
        #expect(received.payload?["notification"]?["body"]?.stringValue?.count == 500)
        #expect(received.payload?["notification"]?["navigate"] == "https://app.example.org/#/room/%21slw48wfj34rtnrf%3Aexample.org")
    }

    @Test(arguments: [
        "x@localhost", "mailto:ops@localhost", "ops@push", "ops@host.local", "ops@push.invalid", "ops@127.0.0.1", "ops@[::1]",
        "https://localhost/contact", "nobody",
    ])
    func checkConfigRefusesAVAPIDSubjectNoPushServiceCanResolve(_ contact: String) async {
        let dir = temporaryDirectory()
        let errors = await ConfigTests().diagnose(
            """
            apps:
              w:
                type: webpush
                vapid_private_key: \(dir)/k.pem
                create_vapid_key_if_missing: true
                vapid_contact_email: '\(contact)'
            """
        ).errors
        #expect(errors.contains { $0.hasPrefix("apps.w.vapid_contact_email: '\(contact)'") && $0.contains("BadJwtToken") }, "\(errors)")
    }

    @Test(arguments: ["ops@example.org", "mailto:push@matrix.example.com", "https://example.org/contact"])
    func aPublicSubjectIsAccepted(_ contact: String) {
        #expect(VAPIDSubject.problem(contact) == nil)
    }

    @Test func declarativeWithoutANavigateURLIsRefused() async {
        let dir = temporaryDirectory()
        let errors = await ConfigTests().diagnose(
            webpushApp("w", directory: dir, extra: "declarative: true").replacingOccurrences(of: "  w:", with: "apps:\n  w:")
        ).errors
        #expect(errors.contains { $0.hasPrefix("apps.w.declarative_navigate: required with declarative: true") }, "\(errors)")
    }

    /// Apple's push service answers 403 `BadJwtToken` for a subject it cannot resolve: every push
    /// fails alike, so the device is dropped (no retry helps) and the operator is told once.
    @Test func aBadJwtTokenAnswerIsDroppedAndLoggedOncePerApp() async throws {
        let setup = try await WebPushEndToEndTests().start()
        let sub = setup.service.subscribe(behavior: .respond(status: 403, reason: "BadJwtToken"))
        let first = try await setup.herald.notify(notifyBody(APNsEndToEndTests.message, devices: [WebPushEndToEndTests().device(sub)]))
        await setup.stop()
        #expect(first.json == ["rejected": []])
        #expect(setup.service.received.count == 1)  // not retried

        let lines = RecordingLogs()
        let logger = Logger(label: "t") { _ in lines }
        let warnings = PushServiceWarnings()
        let answer = UpstreamResponse(status: 403, headers: [:], body: ByteBuffer(string: #"{"reason":"BadJwtToken"}"#))
        for _ in 0..<3 {
            let verdict = PushServiceVerdict.classify(
                answer, pushkey: "k", origin: "https://web.push.apple.com", context: DispatchContext(logger: logger), warnings: warnings)
            guard case .done(.dropped) = verdict else { return #expect(Bool(false), "\(verdict)") }
        }
        #expect(lines.messages.filter { $0.contains("BadJwtToken") }.count == 1)
    }
}

/// A log handler that keeps the messages it is given.
final class RecordingLogs: LogHandler, Sendable {
    private let stored = Mutex<[String]>([])
    var messages: [String] { stored.withLock { $0 } }
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    func log(event: LogEvent) { stored.withLock { $0.append("\(event.message)") } }
}
