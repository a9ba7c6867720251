import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import NIOCore
import NIOHTTP1
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// The relay's pieces without sockets: extended Z85, the APNs payload byte for byte against
/// toot-relay's vectors, and the reading of Web Push headers (docs/webpush-relay.md).
@Suite struct RelayUnitTests {
    @Test(arguments: [
        ("", ""), ("864fd26fb559f75b", "HelloWorld"), ("00", "00"), ("01", "01"), ("ff", "30"), ("0000", "000"), ("ffff", "960"),
        ("000000", "0000"), ("ffffff", "rr90"), ("00000000", "00000"), ("ffffffff", "%nSc0"), ("864fd26fb559f75b01", "HelloWorld01"),
        ("864fd26fb559f75b0102", "HelloWorld033"), ("864fd26fb559f75b010203", "HelloWorld09c6"), ("48656c6c6f", "nm=QN1q"),
        ("000102030405060708090a0b0c0d0e0f", "009c61o!#m2NH?C3>iWS"),
    ])
    func extendedZ85MatchesTheReferenceTable(_ hex: String, _ z85: String) throws {
        let bytes = try #require([UInt8](hex: hex))
        #expect(ExtendedZ85.encode(bytes) == z85)
        #expect(ExtendedZ85.decode(z85) == bytes)
    }

    @Test func extendedZ85OfA65ByteKeyAndWhatADecoderRefuses() {
        let key: [UInt8] = [4] + Array(1...64)
        let expected = "1owMa1o!#m2NH?C3>iWS5d]J*6CRx17-skh9337xar.{NbQB=+c[cR@eg&FcfFLssg=mfIi5%2YjuU>)0:"
        #expect(ExtendedZ85.encode(key) == expected)
        #expect(ExtendedZ85.decode(expected) == key)
        #expect(ExtendedZ85.decode("0") == nil)  // a lone final character
        #expect(ExtendedZ85.decode("00~00") == nil)  // outside the alphabet
        #expect(ExtendedZ85.decode("#####") == nil)  // larger than 4 bytes
    }

    static func vectors() throws -> JSONValue { try fixture("relay/toot_relay_vectors") }

    static func request(_ vector: JSONValue, path: String) throws -> ServerRequest {
        var headers = HTTPHeaders()
        for (name, value) in vector["request_headers"]?.objectValue ?? [:] { headers.add(name: name, value: value.stringValue ?? "") }
        let encoded = try #require(vector["body_b64url"]?.stringValue)
        let body = try #require(Base64URL.decode(encoded))
        return ServerRequest(method: .POST, uri: path, headers: headers, body: ByteBuffer(bytes: body))
    }

    @Test(arguments: ["aesgcm", "aes128gcm"])
    func thePayloadIsTootRelaysByteForByte(_ encoding: String) throws {
        let vectors = try Self.vectors()
        let token = try #require(vectors["token"]?.stringValue)
        let vector = try #require(vectors[encoding])
        let message = try RelayRequest.parse(try Self.request(vector, path: "/relay-to/production/\(token)/acct-42"), now: Date())
        let payload = RelayPayload.encode(body: message.body, senderKey: message.senderKey, salt: message.salt, extra: message.extra)
        #expect(String(decoding: payload, as: UTF8.self) == vector["apns_body"]?.stringValue)

        if encoding == "aesgcm" {
            let bare = try RelayRequest.parse(try Self.request(vector, path: "/relay-to/production/\(token)"), now: Date())
            let withoutExtra = RelayPayload.encode(body: bare.body, senderKey: bare.senderKey, salt: bare.salt, extra: bare.extra)
            #expect(String(decoding: withoutExtra, as: UTF8.self) == vectors["aesgcm_no_extra_apns_body"]?.stringValue)
        }
    }

    func parse(_ headers: [(String, String)], path: String = "/relay-to/development/" + String(repeating: "Ab", count: 32), body: Int = 64)
        throws(RelayError) -> RelayRequest
    {
        var h = HTTPHeaders()
        for (name, value) in headers { h.add(name: name, value: value) }
        return try RelayRequest.parse(
            ServerRequest(method: .POST, uri: path, headers: h, body: ByteBuffer(repeating: 7, count: body)),
            now: Date(timeIntervalSince1970: 1_000_000))
    }

    static let dh = Base64URL.encode([4] + Array(repeating: 9, count: 64))
    static let salt = Base64URL.encode(Array(repeating: 1, count: 16))

    @Test func headerParsingToleratesSpacesCommaListsQuotesAndPadding() throws {
        let message = try parse([
            ("Content-Encoding", " AESGCM "), ("Crypto-Key", "keyid=p256dh , p256ecdsa=abc; dh=\"\(Self.dh)=\""),
            ("Encryption", "keyid=p256dh; salt=\(Self.salt)==; rs=4096"),
        ])
        #expect(message.senderKey == [4] + Array(repeating: 9, count: 64))
        #expect(message.salt == Array(repeating: 1, count: 16))
        #expect(message.environment == .development)
        #expect(message.deviceToken == String(repeating: "ab", count: 32))  // sent lowercase
        #expect(message.extra == nil)
    }

    @Test func webPushHeadersMapToAPNsHeaders() throws {
        let base = [("Content-Encoding", "aes128gcm")]
        #expect(try parse(base + [("Urgency", "very-low")]).priority == 5)
        #expect(try parse(base + [("Urgency", "LOW")]).priority == 5)
        #expect(try parse(base + [("Urgency", "high")]).priority == 10)
        #expect(try parse(base).priority == 10)
        #expect(try parse(base + [("TTL", "60")]).expiration == 1_000_060)
        #expect(try parse(base + [("TTL", "0")]).expiration == 0)
        #expect(try parse(base + [("TTL", "soon")]).expiration == nil)
        #expect(try parse(base + [("TTL", "-5")]).expiration == nil)
        #expect(try parse(base).expiration == nil)
        #expect(try parse(base + [("Topic", "room-1")]).collapseId == "room-1")
        #expect(try parse(base + [("Topic", String(repeating: "t", count: 100))]).collapseId?.utf8.count == 43)
        #expect(try parse(base, path: "/relay-to/sandbox/" + String(repeating: "0", count: 64) + "/a%2Fb/c").extra == "a/b/c")
        #expect(try parse(base, path: "/relay-to/production/" + String(repeating: "0", count: 64) + "/").extra == "")
    }

    @Test func malformedRequestsAreRefusedWithAClearReason() {
        let ok = [("Content-Encoding", "aesgcm"), ("Crypto-Key", "dh=\(Self.dh)"), ("Encryption", "salt=\(Self.salt)")]
        #expect(throws: RelayError.unsupportedEncoding("gzip")) { try parse([("Content-Encoding", "gzip")]) }
        #expect(throws: RelayError.unsupportedEncoding("(none)")) { try parse([]) }
        #expect(throws: RelayError.malformedHeader("Crypto-Key has no dh parameter")) {
            try parse([ok[0], ("Crypto-Key", "p256ecdsa=x"), ok[2]])
        }
        #expect(throws: RelayError.malformedHeader("Encryption has no salt parameter")) { try parse([ok[0], ok[1]]) }
        #expect(throws: RelayError.malformedHeader("Crypto-Key has an entry without '='")) {
            try parse([ok[0], ("Crypto-Key", "dh"), ok[2]])
        }
        #expect(throws: RelayError.malformedHeader("Crypto-Key dh is not a base64url uncompressed P-256 point")) {
            try parse([ok[0], ("Crypto-Key", "dh=!!!"), ok[2]])
        }
        #expect(throws: RelayError.malformedHeader("Encryption salt is not 16 bytes of base64url")) {
            try parse([ok[0], ok[1], ("Encryption", "salt=AAAA")])
        }
        #expect(throws: RelayError.malformedBody("The body is not an aes128gcm message")) {
            try parse([("Content-Encoding", "aes128gcm")], body: 20)
        }
        #expect(throws: RelayError.badDeviceToken) { try parse(ok, path: "/relay-to/production/xyz") }
        #expect(throws: RelayError.badDeviceToken) { try parse(ok, path: "/relay-to/production/" + String(repeating: "0", count: 63)) }
        #expect(throws: RelayError.unknownEnvironment("staging")) {
            try parse(ok, path: "/relay-to/staging/" + String(repeating: "0", count: 64))
        }
        #expect(throws: RelayError.unknownEnvironment("production")) { try parse(ok, path: "/relay-to/production") }
    }

    @Test func aDeviceTokenIsRateLimitedByItsBucketOnly() {
        let limiter = TokenRateLimiter(perMinute: 60, burst: 2, clock: SystemClock())
        let start = ContinuousClock.now
        #expect(limiter.allow("a", now: start))
        #expect(limiter.allow("a", now: start))
        #expect(!limiter.allow("a", now: start))
        #expect(limiter.allow("b", now: start))
        #expect(limiter.allow("a", now: start + .seconds(1)))  // one a second refills
    }

    @Test func outcomesBecomeAnswersThatDoNotMakeSendersDeleteSubscriptionsForHeraldsProblems() {
        func status(_ outcome: DeviceOutcome) -> UInt? { RelayFrontEnd.error(for: outcome, retryAfter: 30)?.status.code }
        #expect(status(.delivered) == nil)
        #expect(status(.rejected(reason: .apns(status: 410, .unregistered))) == 410)
        #expect(status(.rejected(reason: .apns(status: 400, .badDeviceToken))) == 410)
        #expect(status(.rejected(reason: .apns(status: 400, .deviceTokenNotForTopic))) == 410)
        #expect(status(.rejected(reason: .apns(status: 400, .topicDisallowed))) == 502)  // the app's topic, not the token
        #expect(status(.failed(reason: .apns(status: 410, nil))) == 502)  // no reason: APNs's table fails it
        #expect(status(.failed(reason: .apns(status: 403, .invalidProviderToken))) == 502)
        #expect(status(.failed(reason: .apns(status: 400, .badTopic))) == 502)
        #expect(status(.failed(reason: .apns(status: 503, .serviceUnavailable))) == 503)
        #expect(status(.failed(reason: .network("refused"))) == 503)
        #expect(status(.failed(reason: .apns(status: 429, .tooManyRequests))) == 429)
        #expect(status(.failed(reason: .apns(status: 413, .payloadTooLarge))) == 413)
        #expect(status(.dropped(reason: .payloadTooLarge)) == 413)
    }
}
