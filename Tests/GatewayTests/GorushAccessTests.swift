import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import Logging
import NIOCore
import NIOHTTP1
import Testing

@testable import Gateway

/// gorush's API is not an open relay (docs/status-protocol.md, "Who may push"): only
/// `gorush.allowed_networks`, and with `gorush.auth_token_file` only with its bearer token.
@Suite struct GorushAccessTests {
    static let body = #"{"notifications":[{"tokens":["0a0b0c"],"platform":1,"message":"hi"}]}"#

    func post(_ setup: StatusEndToEndTests.Setup, authorization: String? = nil) async throws -> TestResponse {
        var request = HTTPClientRequest(url: setup.herald.base + "/api/push")
        request.method = .POST
        request.body = .bytes(ByteBuffer(string: Self.body))
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        return TestResponse(status: Int(response.status.code), headers: response.headers, body: Array(body.readableBytesView))
    }

    /// The test connects from 127.0.0.1: an allow-list without it refuses, with gorush's shape, and
    /// nothing is sent; the default (loopback and private ranges) admits it.
    @Test func aClientOutsideTheAllowedNetworksIsRefused() async throws {
        let refusing = try await StatusEndToEndTests().start(
            statusExtra: "  gorush:\n    sync: true\n    allowed_networks: ['127.0.0.2/32', '10.0.0.0/8']")
        let refused = try await post(refusing)
        let stats = try await refusing.herald.request(.GET, "/api/stat/app")
        await refusing.stop()
        #expect(refused.status == 403)
        #expect(refused.json == ["code": 403, "message": "This address may not use the push API."])
        #expect(stats.status == 403)
        #expect(refusing.apns.received.isEmpty)

        let admitting = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true")
        let admitted = try await post(admitting)
        await admitting.stop()
        #expect(admitted.status == 200)
        #expect(admitting.apns.received.count == 1)
    }

    @Test func withATokenFileTheBearerTokenIsRequired() async throws {
        let file = temporaryDirectory() + "/gorush-token"
        try "s3cret-token\n".write(toFile: file, atomically: true, encoding: .utf8)
        let setup = try await StatusEndToEndTests().start(statusExtra: "  gorush:\n    sync: true\n    auth_token_file: \(file)")
        let missing = try await post(setup)
        let wrong = try await post(setup, authorization: "Bearer s3cret-tokem")
        let longer = try await post(setup, authorization: "Bearer s3cret-token2")
        let right = try await post(setup, authorization: "Bearer s3cret-token")
        let healthz = try await setup.herald.request(.GET, "/healthz")
        await setup.stop()
        for refused in [missing, wrong, longer] {
            #expect(refused.status == 401)
            #expect(refused.headers.first(name: "WWW-Authenticate") == "Bearer")
            #expect(refused.json == ["code": 401, "message": "A valid bearer token is required."])
        }
        #expect(right.status == 200)
        #expect(healthz.status == 200)  // the health check stays open
        #expect(setup.apns.received.count == 1)
    }

    @Test func checkConfigWarnsOfAnAPIOpenToTheInternet() async throws {
        let file = temporaryDirectory() + "/gorush-token"
        try "t\n".write(toFile: file, atomically: true, encoding: .utf8)
        func warnings(bind: String, gorush: String) async -> [String] {
            let yaml = """
                http:
                  bind_addresses: ['\(bind)']
                apps:
                  w:
                    type: webpush
                    vapid_private_key: \(temporaryDirectory())/v.pem
                    vapid_contact_email: ops@example.org
                    create_vapid_key_if_missing: true
                status:
                  store: \(temporaryDirectory())/s.sqlite
                  gorush:
                \(gorush.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
                """
            return await ConfigTests().diagnose(yaml).warnings.filter { $0.hasPrefix("status.gorush") }
        }
        let open = await warnings(bind: "0.0.0.0", gorush: "allowed_networks: ['0.0.0.0/0']")
        #expect(open.count == 1)
        #expect(open.first?.contains("anyone who reaches it can push") == true)
        #expect(await warnings(bind: "0.0.0.0", gorush: "enabled: true").isEmpty)  // loopback and private only
        #expect(await warnings(bind: "127.0.0.1", gorush: "allowed_networks: ['0.0.0.0/0']").isEmpty)
        #expect(await warnings(bind: "0.0.0.0", gorush: "allowed_networks: ['0.0.0.0/0']\nauth_token_file: \(file)").isEmpty)
    }

    @Test func networksAndTokensCompareAsExpected() throws {
        let v4 = try #require(IPNetwork("192.168.0.0/16"))
        #expect(v4.contains(try #require(IPNetwork.bytes(of: "192.168.44.1"))))
        #expect(!v4.contains(try #require(IPNetwork.bytes(of: "192.169.0.1"))))
        #expect(v4.contains(try #require(IPNetwork.bytes(of: "::ffff:192.168.1.1"))))
        #expect(try #require(IPNetwork("fc00::/7")).contains(try #require(IPNetwork.bytes(of: "fd12::1"))))
        #expect(IPNetwork("10.0.0.0/33") == nil && IPNetwork("example.org") == nil)
        #expect(!v4.includesPublicAddresses)
        #expect(try #require(IPNetwork("172.0.0.0/8")).includesPublicAddresses)
        #expect(try #require(IPNetwork("8.8.8.8")).includesPublicAddresses)
        #expect(ConstantTime.equals(Array("abc".utf8), Array("abc".utf8)))
        #expect(!ConstantTime.equals(Array("abc".utf8), Array("abd".utf8)))
        #expect(!ConstantTime.equals(Array("abc".utf8), Array("abcd".utf8)))
        #expect(!ConstantTime.equals(Array("abcd".utf8), Array("abc".utf8)))
    }
}
