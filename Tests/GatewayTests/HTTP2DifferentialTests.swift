import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldTestSupport
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

@testable import HeraldUpstream
@testable import Pushkins

/// Herald's own HTTP/2 client (`HTTP2Upstream`, justified by measurements, docs/architecture.md,
/// "The upstream-call path") checked against a reference implementation: the same APNs requests
/// sent through it and through AsyncHTTPClient (HTTP/2 as well) to the fake APNs, for every kind
/// of answer the fake can give, must come back with the same status, the same `apns-id` and the
/// same body, and reach the fake the same way.
@Suite struct HTTP2DifferentialTests {
    struct Answer: Equatable {
        var status: Int
        var apnsId: String?
        var body: String
    }

    static let topic = "org.example.app"

    @Test func heraldsHTTP2ClientAnswersAsAsyncHTTPClientDoes() async throws {
        let dir = temporaryDirectory()
        let pki = try TestPKI(directory: dir)
        let key = P256.Signing.PrivateKey()
        let apns = try await FakeAPNs.start(
            pki: pki, topic: Self.topic, auth: .token(keyId: "ABC123DEFG", teamId: "TEAM123456", publicKey: key.publicKey))
        let jwt = try APNsProviderToken.sign(key: key, keyId: "ABC123DEFG", teamId: "TEAM123456", issuedAt: Date())
        let ours = try HTTP2Upstream(
            origin: apns.baseURL,
            settings: UpstreamSettings(requestTimeout: .seconds(60), trustedCAFiles: [pki.caFile], maxResponseBytes: 1 << 20),
            tls: .makeClientConfiguration())
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(pki.caFile)]
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow, decompression: .disabled)
        configuration.httpVersion = .automatic  // HTTP/2 through ALPN, as APNs requires
        let reference = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)

        // One token per kind of answer; each is asked twice, once through each client.
        let behaviours: [(String, FakeAPNs.Behavior)] = [
            ("accept", .accept), ("bad-token", .fail(400, "BadDeviceToken")), ("gone", .fail(410, "Unregistered")),
            ("throttled", .fail(429, "TooManyRequests")), ("unavailable", .fail(503, "ServiceUnavailable", retryAfter: "30")),
            ("large", .fail(400, String(repeating: "x", count: 100_000))), ("slow", .delay(.milliseconds(50), then: .accept)),
        ]
        var tokens: [String: String] = [:]
        for (name, behaviour) in behaviours {
            let token = Hex.encode(Array(SHA256.hash(data: Data(name.utf8))))
            tokens[name] = token
            apns.script(token, behaviour)
        }
        func headers(_ id: String) -> HTTPHeaders {
            [
                "authorization": "bearer \(jwt)", "apns-topic": Self.topic, "apns-push-type": "alert", "apns-priority": "10",
                "apns-id": id, "content-type": "application/json",
            ]
        }
        let payload = #"{"aps":{"alert":"hi"}}"#
        var differences: [String] = []
        for (name, _) in behaviours {
            let path = "/3/device/\(tokens[name] ?? "")"
            let id = UUID().uuidString
            let mine = try await ours.send(
                UpstreamRequest(url: apns.baseURL + path, headers: headers(id), body: ByteBuffer(string: payload)))
            var request = HTTPClientRequest(url: apns.baseURL + path)
            request.method = .POST
            request.headers = headers(id)
            request.body = .bytes(ByteBuffer(string: payload))
            let response = try await reference.execute(request, timeout: .seconds(60))
            let theirs = Answer(
                status: Int(response.status.code), apnsId: response.headers.first(name: "apns-id"),
                body: String(buffer: try await response.body.collect(upTo: 1 << 20)))
            let mineAnswer = Answer(status: mine.status, apnsId: mine.headers.first(name: "apns-id"), body: mine.bodyText)
            if mineAnswer != theirs { differences.append("\(name): \(mineAnswer) vs \(theirs)") }
        }
        // What reached APNs: each request twice, identical but for the client's own headers.
        let received = apns.received
        await ours.shutdown()
        try await reference.shutdown()
        await apns.stop()

        #expect(differences.isEmpty, "\(differences)")
        #expect(received.count == 2 * behaviours.count)
        for (name, _) in behaviours {
            let both = received.filter { $0.token == tokens[name] }
            #expect(both.count == 2, "\(name)")
            #expect(Set(both.map { $0.payload.map { JSONWriter.serialize($0) } ?? [] }).count == 1, "\(name): the bodies differ")
            let shared = ["apns-topic", "apns-push-type", "apns-priority", "content-type"]
            #expect(Set(both.map { h in shared.map { h.headers[$0] ?? "" } }).count == 1, "\(name): the headers differ")
        }
    }
}
