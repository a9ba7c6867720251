import Crypto
import Foundation
import HeraldTestSupport
import Testing
import _CryptoExtras

@testable import HeraldCore
@testable import Pushkins

/// Push Kit's answers, their classification, and what is sent (docs/compatibility/hms.md).
@Suite struct HMSTests {
    @Test func androidPartialSuccessListsIllegalTokensInAStringMsg() {
        let body = #"{"code":"80100000","msg":"{\"success\":1,\"failure\":1,\"illegal_tokens\":[\"t2\"]}","requestId":"r1"}"#
        let answer = HMSResponseBody.parse(Array(body.utf8))
        #expect(answer.code == .partialSuccess)
        #expect(answer.requestId == "r1")
        #expect(answer.refused == ["t2": .illegalToken])
    }

    @Test func harmonyOSGroupsRefusedTokensByReason() {
        let body =
            #"{"code":"80300007","msg":"{\"illegalTokens\":{\"noRight\":[\"a\"],\"tokenFormatError\":[\"b\",\"c\"],\"someNewReason\":[\"d\"]},\"failure\":4}","requestId":"r"}"#
        let answer = HMSResponseBody.parse(Array(body.utf8))
        #expect(answer.code == .allTokensInvalid)
        // An unknown reason is never taken for a dead token.
        #expect(answer.refused == ["a": .noRight, "b": .tokenFormatError, "c": .tokenFormatError, "d": .noPushTypeRight])
    }

    @Test func bodiesThatAreNotPushKitsParseToNoCode() {
        for body in ["", "not json", "[]", #"{"msg":"plain text"}"#, #"{"code":"99999999","msg":"{"}"#] {
            let answer = HMSResponseBody.parse(Array(body.utf8))
            #expect(answer.code == nil)
            #expect(answer.refused.isEmpty)
        }
        #expect(HMSResponseBody.parse(Array(#"{"code":80000000}"#.utf8)).code == .success)
    }

    /// Every documented code is placed; only the credential codes renew, and no code is a
    /// rejection by itself.
    @Test func everyCodeIsClassified() {
        var table: [String: HMSDisposition] = [:]
        for code in HMSResultCode.allCases { table[code.rawValue] = HMSDisposition.of(status: 200, code: code) }
        #expect(table["80000000"] == .delivered)
        #expect(table["80100000"] == .partial)
        #expect(table["80300007"] == .allTokensRefused)
        #expect(Set(table.filter { $0.value == .renewCredential }.keys) == ["80200001", "80200003", "80200005"])
        #expect(Set(table.filter { $0.value == .temporary }.keys) == ["80600003", "81000001", "80300029"])
        #expect(Set(table.filter { $0.value == .configuration }.keys) == ["80300002", "80300011", "80300036", "80300037"])
        #expect(HMSDisposition.of(status: 503, code: nil) == .temporary)
        #expect(HMSDisposition.of(status: 401, code: nil) == .renewCredential)
        #expect(HMSDisposition.of(status: 404, code: nil) == .configuration)
        #expect(HMSDisposition.of(status: 400, code: nil) == .permanent)
    }

    @Test func tokenOutcomesRejectOnlyDeadTokens() {
        let answer = HMSResponseBody(
            code: .partialSuccess,
            refused: ["bad": .tokenFormatError, "other": .noRight, "perm": .noPushTypeRight, "cc": .countryNotSupport])
        #expect(HMSPushkin.outcome("ok", answer: answer, status: 200, othersDelivered: true) == .delivered)
        #expect(HMSPushkin.outcome("bad", answer: answer, status: 200, othersDelivered: true).isRejected)
        #expect(HMSPushkin.outcome("other", answer: answer, status: 200, othersDelivered: true).isRejected)
        #expect(HMSPushkin.outcome("other", answer: answer, status: 400, othersDelivered: false).label == "failed")
        #expect(HMSPushkin.outcome("perm", answer: answer, status: 200, othersDelivered: true).label == "failed")
        #expect(HMSPushkin.outcome("cc", answer: answer, status: 200, othersDelivered: true).label == "dropped")
        #expect(HMSPushkin.outcome("bad", answer: answer, status: 200, othersDelivered: true).providerSaysTokenIsDead)
    }

    @Test func theSizePushKitCountsLeavesTokensOut() {
        let one = HMSMessage.android(data: ["a": "b"], highPriority: true, ttl: 60, options: [:], tokens: ["t"])
        let many = HMSMessage.android(data: ["a": "b"], highPriority: true, ttl: 60, options: [:], tokens: (0..<1000).map { "token-\($0)" })
        #expect(HMSMessage.countedBytes(one) == HMSMessage.countedBytes(many))
        let alert = HMSMessage.harmony(
            .alert, data: [:], alert: ("IM", "t", "b"), badge: 3, room: "!r", ttl: 60, tokens: (0..<10).map { "x\($0)" })
        #expect(HMSMessage.countedBytes(alert) < 300)
        #expect(alert["payload"]?["notification"]?["badge"] == ["setNum": 3])
    }

    @Test func notifyIdsAreStablePerRoomAndPositive() {
        #expect(HMSMessage.notifyId("!a:example.org") == HMSMessage.notifyId("!a:example.org"))
        #expect(HMSMessage.notifyId("!a:example.org") != HMSMessage.notifyId("!b:example.org"))
        #expect(HMSMessage.notifyId("!a:example.org") >= 0)
    }

    @Test func theServiceAccountJWTIsPS256WithHuaweisClaims() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let account = HMSServiceAccount(
            projectId: "p", keyId: "k1", subAccount: "42", tokenURI: HMSServiceAccount.defaultTokenURI, key: key)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = try account.jwt(now: now)
        let parts = try #require(JWT.decode(token))
        #expect(parts.header == ["kid": "k1", "typ": "JWT", "alg": "PS256"])
        #expect(
            parts.claims == ["iss": "42", "aud": .string(HMSServiceAccount.defaultTokenURI), "iat": 1_800_000_000, "exp": 1_800_003_600])
        let signature = _RSA.Signing.RSASignature(rawRepresentation: parts.signature)
        #expect(key.publicKey.isValidSignature(signature, for: SHA256.hash(data: Data(parts.signingInput.utf8)), padding: .PSS))
        #expect(
            !key.publicKey.isValidSignature(signature, for: SHA256.hash(data: Data(parts.signingInput.utf8)), padding: .insecurePKCS1v1_5))
    }
}
