import Crypto
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

/// RFC 8291 Appendix A: the worked example, byte for byte.
@Suite struct WebPushEncryptionTests {
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    static let uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    func bytes(_ s: String) throws -> [UInt8] { try #require(Base64URL.decode(s)) }

    /// RFC 4231's test cases 2 (a short key) and 6 (a key longer than the block, hashed first).
    @Test func hmacMatchesRFC4231() {
        let short = WebPushEncryption.hmac(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(short) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let long = WebPushEncryption.hmac(
            key: [UInt8](repeating: 0xAA, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(Hex.encode(long) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func encryptsTheRFCExampleToItsExactBytes() throws {
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes(Self.asPrivate))
        let body = try WebPushEncryption.encrypt(
            Array(Self.plaintext.utf8), p256dh: bytes(Self.uaPublic), authSecret: bytes(Self.auth), salt: bytes(Self.salt),
            senderKey: sender)
        #expect(Base64URL.encode(body) == Self.body)
    }

    @Test func decryptsTheRFCExample() throws {
        let ua = try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes(Self.uaPrivate))
        #expect(Base64URL.encode(ua.publicKey.x963Representation) == Self.uaPublic)
        let plain = try WebPushEncryption.decrypt(try bytes(Self.body), uaPrivate: ua, authSecret: bytes(Self.auth))
        #expect(String(decoding: plain, as: UTF8.self) == Self.plaintext)
    }

    @Test func freshKeysAndSaltEachMessageAndItStillDecrypts() throws {
        let ua = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { UInt8($0) }
        let p256dh = [UInt8](ua.publicKey.x963Representation)
        let a = try WebPushEncryption.encrypt(Array("hi".utf8), p256dh: p256dh, authSecret: auth)
        let b = try WebPushEncryption.encrypt(Array("hi".utf8), p256dh: p256dh, authSecret: auth)
        #expect(a[0..<16] != b[0..<16], "a fresh salt")
        #expect(a[21..<86] != b[21..<86], "a fresh sender key")
        #expect(a.count == WebPushEncryption.overhead + 2)
        #expect(try WebPushEncryption.decrypt(b, uaPrivate: ua, authSecret: auth) == Array("hi".utf8))
        #expect(try WebPushEncryption.decrypt(a, uaPrivate: ua, authSecret: auth) == Array("hi".utf8))
    }

    @Test func tamperedBodyDoesNotDecrypt() throws {
        let ua = try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes(Self.uaPrivate))
        var body = try bytes(Self.body)
        body[body.count - 20] ^= 1
        #expect(throws: WebPushEncryption.Error.decryptionFailed) {
            try WebPushEncryption.decrypt(body, uaPrivate: ua, authSecret: try bytes(Self.auth))
        }
    }

    @Test func badKeysAreRefused() {
        #expect(throws: WebPushEncryption.Error.invalidPublicKey) {
            try WebPushEncryption.encrypt([1], p256dh: [4] + [UInt8](repeating: 1, count: 64), authSecret: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: WebPushEncryption.Error.invalidAuthSecret) {
            try WebPushEncryption.encrypt([1], p256dh: [], authSecret: [1])
        }
    }
}
