import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTestSupport
import NIOCore
import Pushkins
import StatusAdapter
import SwiftProtobuf

/// Prepares a Status push-request benchmark against a running Herald: registers `clients`
/// clients (APNs tokens, delivered by the fake APNs) and writes `count` distinct signed push
/// requests, each a 4-byte big-endian length and the message, for wrk to send in turn.
enum StatusLoad {
    static func prepare(url: String, clients clientCount: Int, count: Int, output: String) async throws {
        let server = try await identity(url)
        var recipients: [(StatusTestClient, String)] = []
        for _ in 0..<clientCount {
            let client = StatusTestClient()
            let token = UUID().uuidString.lowercased()
            let apnsToken = Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
            let registration = try client.registration(server: server, token: apnsToken, accessToken: token, topic: "com.example.app")
            _ = try await post("\(url)/_status/v1/message", body: try client.registrationMessage(registration, server: server))
            recipients.append((client, token))
        }
        let sender = StatusTestClient()
        var file = Data()
        for n in 0..<count {
            let (recipient, token) = recipients[n % recipients.count]
            var request = Protobuf_PushNotificationRequest()
            request.messageID = Data(Keccak.keccak256(Array("bench-\(n)-\(UUID().uuidString)".utf8)))
            request.requests = [sender.notification(to: recipient, accessToken: token)]
            let message = try StatusTestClient.pushMessage(request)
            var length = UInt32(message.count).bigEndian
            file.append(Data(bytes: &length, count: 4))
            file.append(contentsOf: message)
        }
        try file.write(to: URL(fileURLWithPath: output))
    }

    /// Writes `count` registrations of distinct new clients (APNs tokens), each a 4-byte big-endian
    /// length and the message, for wrk to send in turn: every one is a new row in the store.
    static func registrations(url: String, count: Int, output: String) async throws {
        let server = try await identity(url)
        var file = Data()
        for _ in 0..<count {
            let client = StatusTestClient()
            let apnsToken = Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
            let message = try client.registrationMessage(
                try client.registration(server: server, token: apnsToken, topic: "com.example.app"), server: server)
            var length = UInt32(message.count).bigEndian
            file.append(Data(bytes: &length, count: 4))
            file.append(contentsOf: message)
        }
        try file.write(to: URL(fileURLWithPath: output))
    }

    static func identity(_ url: String) async throws -> Secp256k1.PublicKey {
        let identity = try await get("\(url)/_status/v1/identity")
        guard let hex = (try? JSONParser.parse(identity))?["public_key"]?.stringValue, let bytes = [UInt8](hex: hex) else {
            throw LoadError(message: "no Status identity at \(url)")
        }
        return try Secp256k1.PublicKey(bytes: bytes)
    }

    struct LoadError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static func get(_ url: String) async throws -> [UInt8] {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        return Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)
    }

    static func post(_ url: String, body: [UInt8]) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        return Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)
    }
}
