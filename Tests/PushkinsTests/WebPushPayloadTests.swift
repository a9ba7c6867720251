import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

@Suite struct WebPushPayloadTests {
    static let canonical = PushNotification(
        eventId: "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs", roomId: "!slw48wfj34rtnrf:example.com", type: "m.room.message",
        sender: "@exampleuser:matrix.org", senderDisplayName: "Major Tom", roomName: "Mission Control",
        roomAlias: "#exampleroom:matrix.org", prio: "high",
        content: ["msgtype": "m.text", "body": "I'm floating in a most peculiar way.", "other": 1],
        counts: .init(unread: 2, missedCalls: 1))

    @Test func canonicalPayloadAsSygnalBuildsIt() {
        let payload = WebPushPayload.build(Self.canonical, defaultPayload: nil)
        let expected: JSONValue = [
            "room_id": "!slw48wfj34rtnrf:example.com", "room_name": "Mission Control", "room_alias": "#exampleroom:matrix.org",
            "event_id": "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs", "sender": "@exampleuser:matrix.org",
            "sender_display_name": "Major Tom", "type": "m.room.message", "unread": 2, "missed_calls": 1,
            "content": ["msgtype": "m.text", "body": "I'm floating in a most peculiar way.", "other": 1],
        ]
        #expect(JSONValue.object(payload) == expected)  // order too
    }

    @Test func onlyTruthyFieldsCountsAlwaysAndDefaultPayloadFirst() {
        var n = PushNotification(roomId: "", type: nil, sender: "", userIsTarget: true, counts: .init(unread: 0))
        n.membership = "invite"
        let payload = WebPushPayload.build(n, defaultPayload: ["x": 1, "unread": 9])
        #expect(JSONValue.object(payload) == ["x": 1, "unread": 0, "membership": "invite", "user_is_target": true])
    }

    @Test func contentRules() {
        var n = Self.canonical
        n.content = [
            "body": .string(String(repeating: "🦉", count: 1001)), "formatted_body": "<b>x</b>",
            "ciphertext": .string(String(repeating: "c", count: 2001)), "msgtype": "m.text",
        ]
        let content = WebPushPayload.build(n, defaultPayload: nil)["content"]?.objectValue
        #expect(content?["formatted_body"] == nil)
        #expect(content?["ciphertext"] == nil)
        #expect(content?["body"] == .string(String(repeating: "🦉", count: 999) + "…"))
        n.content = ["ciphertext": .string(String(repeating: "c", count: 2000))]
        #expect(WebPushPayload.build(n, defaultPayload: nil)["content"]?["ciphertext"] != nil)
        n.content = [:]
        #expect(WebPushPayload.build(n, defaultPayload: nil)["content"] == nil)
    }

    @Test func oversizePayloadIsShortenedFromTheLongestFieldWithoutSplittingCharacters() throws {
        var n = Self.canonical
        n.roomName = String(repeating: "☻", count: 3000)  // 9000 bytes
        let bytes = try #require(WebPushPayload.encode(WebPushPayload.build(n, defaultPayload: nil)))
        #expect(bytes.count <= WebPushEncryption.maxPlaintext)
        #expect(bytes.count > WebPushEncryption.maxPlaintext - 3)
        let parsed = try JSONParser.parse(bytes)
        let name = try #require(parsed["room_name"]?.stringValue)
        #expect(name.allSatisfy { $0 == "☻" })
        #expect(parsed["content"]?["body"] == "I'm floating in a most peculiar way.")
    }

    @Test func topicIsAValidRFC8030Token() {
        let topic = WebPushPushkin.topic(forRoom: "!slw48wfj34rtnrf:example.com")
        #expect(topic.count == 32)
        #expect(topic.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        #expect(topic == WebPushPushkin.topic(forRoom: "!slw48wfj34rtnrf:example.com"))
        #expect(topic != WebPushPushkin.topic(forRoom: "!other:example.com"))
    }

    @Test func vapidTokenVerifiesAndIsCachedPerOrigin() throws {
        let key = P256.Signing.PrivateKey()
        let signer = VAPIDSigner(key: key, contactEmail: "ops@example.org")
        let now = Date()
        let header = try signer.authorization(origin: "https://push.example.net", now: now)
        #expect(try signer.authorization(origin: "https://push.example.net", now: now) == header)
        #expect(try signer.authorization(origin: "https://other.example.net", now: now) != header)
        let token = String(try #require(header.split(separator: ",").first).dropFirst("vapid t=".count))
        let (_, claims) = try #require(JWT.verifyES256(token, publicKey: key.publicKey))
        #expect(claims["aud"] == "https://push.example.net")
        #expect(claims["sub"] == "mailto:ops@example.org")
        let exp = try #require(claims["exp"]?.pythonInt)
        #expect(Double(exp) - Date().timeIntervalSince1970 <= 24 * 3600)
        #expect(header.hasSuffix(",k=" + VAPIDKey.applicationServerKey(key)))
    }
}

@Suite struct SupportTests {
    @Test(arguments: [
        ("127.0.0.1", false), ("10.1.2.3", false), ("172.16.0.1", false), ("172.32.0.1", true), ("192.168.1.1", false),
        ("169.254.169.254", false), ("224.0.0.1", false), ("8.8.8.8", true), ("0.0.0.0", false), ("100.64.0.1", false),
        ("::1", false), ("fe80::1", false), ("fd00::1", false), ("ff02::1", false), ("::ffff:127.0.0.1", false),
        ("2001:4860:4860::8888", true), ("[::1]", false),
    ])
    func classifiesAddresses(_ address: String, _ isPublic: Bool) {
        #expect((NetworkAddress.classify(literal: address) == .global) == isPublic)
    }

    @Test func hostnamesAreNotLiterals() {
        #expect(NetworkAddress.classify(literal: "push.example.com") == nil)
    }

    @Test func retryAfterSecondsAndHTTPDate() {
        #expect(RetryAfter.parse("120", now: Date()) == .seconds(120))
        #expect(RetryAfter.parse("garbage", now: Date()) == nil)
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:50:37 GMT", now: now) == .seconds(60))
    }

    @Test func base64AcceptsBothAlphabetsAndPadding() {
        #expect(Base64URL.decode("-_8=") == [0xFB, 0xFF])
        #expect(Base64URL.decode("+/8") == [0xFB, 0xFF])
        #expect(Base64URL.decode("a") == nil)
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
    }

    @Test func redactionShowsOnlyAPrefix() {
        #expect(Redaction.pushkey("abcdefghijklmnop") == "abcdef…")
        #expect(!Redaction.pushkey("secret").contains("secret"))
    }

    @Test func retryingStopsAtMaxAttemptsAndWithinBudget() async {
        let policy = RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(1), maxBackoff: .milliseconds(2), budget: .seconds(50))
        var calls = 0
        let result: Result<Int, RetryExhausted<String>> = await Retrying.run(policy: policy, clock: SystemClock()) { _ in
            calls += 1
            return .retry(reason: "503", after: nil)
        }
        #expect(calls == 3)
        #expect(result == .failure(RetryExhausted(reason: "503", attempts: 3, budgetSpent: false)))
        calls = 0
        let budgeted: Result<Int, RetryExhausted<String>> = await Retrying.run(policy: policy, clock: SystemClock()) { _ in
            calls += 1
            return .retry(reason: "429", after: .seconds(60))
        }
        #expect(calls == 1)
        #expect(budgeted == .failure(RetryExhausted(reason: "429", attempts: 1, budgetSpent: true)))
    }

    @Test func endpointParsing() throws {
        let e = try #require(EndpointPolicy.parse("https://Push.Example.com:8443/a/b?c"))
        #expect(e.netloc == "push.example.com:8443" || e.netloc == "Push.Example.com:8443")
        #expect(e.origin.lowercased() == "https://push.example.com:8443")
        #expect(EndpointPolicy.parse("ftp://x/y") == nil)
        #expect(EndpointPolicy.parse("not a url") == nil)
        #expect(EndpointPolicy.parse("https://[::1]:9/x")?.netloc == "[::1]:9")
        // An internationalized host is reached by its ASCII name, the one DNS and TLS take.
        #expect(EndpointPolicy.parse("https://xn--bcher-kva.de/push")?.host == "xn--bcher-kva.de")
        #expect(EndpointPolicy.parse("https://bücher.de/push")?.origin == "https://xn--bcher-kva.de")
        #expect(try UpstreamOrigin("https://xn--bcher-kva.de:8443/x").authority == "xn--bcher-kva.de:8443")
    }
}
