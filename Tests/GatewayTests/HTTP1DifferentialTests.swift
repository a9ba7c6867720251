import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import NIOCore
import NIOHTTP1
import Testing

@testable import Gateway
@testable import HeraldUpstream
@testable import Pushkins

/// Herald's own HTTP/1.1 client (`UpstreamHTTPClient` over `OriginPools`, the one HTTP/1 stack in
/// the binary) and its HTTP/1.1 server, both checked against a reference: the same requests, the
/// server's edge cases among them (unknown path, wrong method, bad JSON, a body past the limit, a
/// `HEAD`), sent to a running Herald through it and through AsyncHTTPClient, must get the same
/// status, content type and body.
@Suite struct HTTP1DifferentialTests {
    struct Answer: Equatable {
        var status: Int
        var contentType: String?
        var body: String
    }

    @Test func heraldsHTTP1ClientAndServerAnswerAsAsyncHTTPClientSees() async throws {
        let herald = try await RunningGateway.start(
            gatewayYAML(apps: "  com.example.probe:\n    type: probe\n") + "\n", registry: .withProbe(Probe()))
        let ours = try UpstreamHTTPClient(settings: UpstreamSettings(requestTimeout: .seconds(60), maxResponseBytes: 1 << 20))
        let reference = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled))
        let notify = "/_matrix/push/v1/notify"
        let requests: [(HTTPMethod, String, String?)] = [
            (.GET, "/health", nil), (.HEAD, "/health", nil), (.GET, "/nope", nil), (.DELETE, notify, nil),
            (.POST, notify, "{not json"), (.POST, notify, #"{"notification":{"devices":[]}}"#),
            (.POST, notify, #"{"notification":{"devices":[{"app_id":"com.example.probe","pushkey":"accept"}]}}"#),
            (.POST, notify, #"{"notification":{"devices":[{"app_id":"unknown","pushkey":"k"}]}}"#),
            (.POST, notify, String(repeating: " ", count: 600 * 1024)),  // past the 512 KiB body limit
            (.GET, "/health?x=%zz", nil),
        ]
        var differences: [String] = []
        for (method, path, body) in requests {
            var headers = HTTPHeaders()
            if body != nil { headers.add(name: "Content-Type", value: "application/json") }
            let mine = try await ours.send(
                UpstreamRequest(method: method, url: herald.base + path, headers: headers, body: body.map { ByteBuffer(string: $0) }))
            var request = HTTPClientRequest(url: herald.base + path)
            request.method = method
            request.headers = headers
            if let body { request.body = .bytes(ByteBuffer(string: body)) }
            let response = try await reference.execute(request, timeout: .seconds(60))
            let theirs = Answer(
                status: Int(response.status.code), contentType: response.headers.first(name: "content-type"),
                body: String(buffer: try await response.body.collect(upTo: 1 << 20)))
            let mineAnswer = Answer(status: mine.status, contentType: mine.headers.first(name: "content-type"), body: mine.bodyText)
            if mineAnswer != theirs { differences.append("\(method) \(path.prefix(40)): \(mineAnswer) vs \(theirs)") }
        }
        await ours.shutdown()
        try await reference.shutdown()
        await herald.stop()
        #expect(differences.isEmpty, "\(differences)")
    }
}
