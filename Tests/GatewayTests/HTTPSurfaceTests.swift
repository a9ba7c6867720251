import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// The HTTP surface of the gateway: health, discovery, 404/405 as Matrix JSON, body limits.
@Suite struct HTTPSurfaceTests {
    func start() async throws -> RunningGateway {
        try await RunningGateway.start(gatewayYAML(apps: "  com.example.probe:\n    type: probe\n"), registry: .withProbe(Probe()))
    }

    @Test func healthAnswers200WithAnEmptyBody() async throws {
        let herald = try await start()
        let get = try await herald.request(.GET, "/health")
        let head = try await herald.request(.HEAD, "/health")
        await herald.stop()
        #expect(get.status == 200)
        #expect(get.body.isEmpty)
        #expect(head.status == 200)
    }

    @Test func getOnNotifyAnswersUnifiedPushDiscovery() async throws {
        // Discovery is answered when a UnifiedPush app is configured (UnifiedPushEndToEndTests has the other case).
        let herald = try await RunningGateway.start(
            gatewayYAML(apps: "  com.example.probe:\n    type: probe\n  \"up.*\":\n    type: unifiedpush\n"), registry: .withProbe(Probe()))
        let response = try await herald.request(.GET, "/_matrix/push/v1/notify")
        await herald.stop()
        #expect(response.status == 200)
        #expect(response.json == ["unifiedpush": ["gateway": "matrix"]])
        #expect(response.headers.first(name: "Content-Type") == "application/json")
    }

    @Test func unknownPathsAre404AndWrongMethods405AsMatrixJSON() async throws {
        let herald = try await start()
        let missing = try await herald.request(.GET, "/nope")
        let postHealth = try await herald.request(.POST, "/health", body: [])
        let putNotify = try await herald.request(.PUT, "/_matrix/push/v1/notify", body: [])
        let deleteNotify = try await herald.request(.DELETE, "/_matrix/push/v1/notify")
        await herald.stop()
        #expect(missing.status == 404)
        #expect(missing.json == ["errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"])
        for response in [postHealth, putNotify, deleteNotify] {
            #expect(response.status == 405)
            #expect(response.json?["errcode"] == "M_UNRECOGNIZED")
        }
    }

    @Test func notifySubPathsAndQueryStringsReachTheNotifyHandlerAsInSygnal() async throws {
        let herald = try await start()
        let body = Array(JSONWriter.serialize(notifyBody(devices: [["app_id": "com.example.probe", "pushkey": "reject"]])))
        let sub = try await herald.request(.POST, "/_matrix/push/v1/notify/extra?x=1", body: body)
        await herald.stop()
        #expect(sub.status == 200)
        #expect(sub.json == ["rejected": ["reject"]])
    }

    @Test func announcedOversizeBodyGets413AndTheConnectionIsClosed() async throws {
        let herald = try await start()
        let port = herald.gateway.ports[0]
        let answer = await RawHTTP.exchangeOffPool(
            port: port,
            head: "POST /_matrix/push/v1/notify HTTP/1.1\r\nHost: x\r\nContent-Length: 600000\r\n\r\n",
            chunks: Array(repeating: [UInt8](repeating: 0x20, count: 1024), count: 600))
        #expect(try await herald.request(.GET, "/health").status == 200)
        await herald.stop()
        #expect(answer.hasPrefix("HTTP/1.1 413"))
        #expect(answer.contains("M_TOO_LARGE"))
        #expect(answer.contains("Connection: close"))
    }

    @Test func streamedOversizeBodyGets413() async throws {
        let herald = try await start()
        let port = herald.gateway.ports[0]
        let chunk = Array("400\r\n".utf8) + [UInt8](repeating: 0x20, count: 1024) + Array("\r\n".utf8)
        let answer = await RawHTTP.exchangeOffPool(
            port: port, head: "POST /_matrix/push/v1/notify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
            chunks: Array(repeating: chunk, count: 700))
        let after = try await herald.request(.GET, "/health")
        await herald.stop()
        #expect(answer.hasPrefix("HTTP/1.1 413"))
        #expect(answer.contains("Connection: close"))
        let body = try #require(answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) })
        #expect(try JSONParser.parse(Array(body.utf8)) == ["errcode": "M_TOO_LARGE", "error": "Request body exceeds 524288 bytes"])
        #expect(after.status == 200)  // the server still serves
    }

    @Test func bodyJustUnderTheLimitIsRead() async throws {
        let herald = try await start()
        let padding = String(repeating: " ", count: 512 * 1024 - 200)
        let body = #"{"notification": {"devices": [{"app_id": "com.example.probe", "pushkey": "accept"}]}}"# + padding
        let response = try await herald.notify(body)
        await herald.stop()
        #expect(response.status == 200)
    }

    @Test func malformedHTTPGets400AndTheServerKeepsServing() async throws {
        let herald = try await start()
        let port = herald.gateway.ports[0]
        let answer = await RawHTTP.exchangeOffPool(port: port, head: "GARBAGE\r\n\r\n")
        #expect(try await herald.request(.GET, "/health").status == 200)
        await herald.stop()
        #expect(answer.hasPrefix("HTTP/1.1 400"))
    }
}
