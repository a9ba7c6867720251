import Foundation
import HeraldCore
import HeraldHTTPServer
import NIOCore
import NIOHTTP1
import Pushkins
import StatusAdapter

/// The parsers that read what the network sends, as fuzzing targets (docs/fuzzing.md). Each takes
/// any bytes and must neither crash nor hang; what it returns does not matter. `herald-fuzz` runs
/// them under libFuzzer, and the tests replay the seed corpus in `fuzz/corpus/<target>/`. `run`
/// says whether the input got past the first parser (a corpus of inputs that never do is useless).
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// Herald's JSON parser, and writing back what it parsed.
    case json
    /// A `/_matrix/push/v1/notify` body, up to the payloads each pushkin would build from it.
    case notify
    /// A Status `ApplicationMetadataMessage`, and its payload as every message type Herald reads.
    case status
    /// A Web Push relay request: the first line is the path, header lines follow, then a blank
    /// line and the body.
    case relay
    /// A gorush `POST /api/push` body.
    case gorush
    /// A Huawei Push Kit answer, and each token's outcome in it.
    case hms

    @discardableResult
    package func run(_ bytes: [UInt8]) -> Bool {
        switch self {
        case .json: return Self.json(bytes)
        case .notify: return Self.notify(bytes)
        case .status: return Self.status(bytes)
        case .relay: return Self.relay(bytes)
        case .gorush: return (try? GorushAPI.parseRequest(bytes, maxNotification: 100)) != nil
        case .hms: return Self.hms(bytes)
        }
    }

    static func hms(_ bytes: [UInt8]) -> Bool {
        let answer = HMSResponseBody.parse(bytes)
        for status in [200, 400, 401, 503] {
            switch HMSDisposition.of(status: status, code: answer.code) {
            case .partial, .allTokensRefused:
                for token in answer.refused.keys.prefix(50) {
                    _ = HMSPushkin.outcome(token, answer: answer, status: status, othersDelivered: status == 200)
                }
            case .delivered, .renewCredential, .temporary, .permanent, .configuration: break
            }
        }
        return answer.rawCode != nil
    }

    static func json(_ bytes: [UInt8]) -> Bool {
        guard let value = try? JSONParser.parse(bytes) else { return false }
        let written = JSONWriter.serialize(value)
        // What Herald writes, it reads back as the same value.
        guard let again = try? JSONParser.parse(written), again == value else {
            fatalError("JSON round trip changed \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
        return true
    }

    static func notify(_ bytes: [UInt8]) -> Bool {
        guard let notification = try? NotificationParser.parse(body: bytes) else { return false }
        for device in notification.devices { apnsPayloadsAgree(notification, device) }
        _ = WebPushPayload.encode(WebPushPayload.build(notification, defaultPayload: nil))
        _ = UnifiedPushPayload.encode(notification, limit: 4096)
        if let eventId = notification.eventId { _ = APNsPushkin.collapseId(eventId) }
        return true
    }

    /// The APNs payload written straight into its buffer is the tree's, byte for byte.
    static func apnsPayloadsAgree(_ notification: PushNotification, _ device: Device) {
        let built = APNsPayload.build(notification, device: device, sendBadgeCounts: true)
        var buffer = ByteBuffer()
        let result = APNsPayloadWriter.write(notification, device: device, sendBadgeCounts: true, into: &buffer)
        let agree: Bool
        switch (result, built) {
        case (.needsTree, _): agree = true
        case (.nothingToSend, .nothingToSend): agree = true
        case (.written, .send(let payload)):
            agree = Array(buffer.readableBytesView) == JSONWriter.serialize(.object(payload), style: .python)
        default: agree = false
        }
        if !agree { fatalError("the written APNs payload is not the built one for event \(notification.eventId ?? "")") }
    }

    /// A fixed server key, so that payloads can be opened as the server would.
    static let serverKey = try? Secp256k1.PrivateKey(rawRepresentation: [UInt8](repeating: 7, count: 32))

    static func status(_ bytes: [UInt8]) -> Bool {
        let opened = try? StatusEnvelope.open(bytes)
        if let opened, let key = serverKey, let shared = try? key.sharedX(with: opened.signer),
            let plain = try? StatusCrypto.open(opened.payload, key: shared)
        {
            _ = try? Protobuf_PushNotificationRegistration(serializedBytes: plain)
        }
        _ = try? Protobuf_PushNotificationRegistration(serializedBytes: bytes)
        _ = try? Protobuf_PushNotificationQuery(serializedBytes: bytes)
        _ = try? Protobuf_PushNotificationRequest(serializedBytes: bytes)
        if let key = serverKey { _ = try? StatusCrypto.open(bytes, key: key.rawRepresentation) }
        return opened != nil
    }

    static func relay(_ bytes: [UInt8]) -> Bool {
        let split = bytes.indices.first { bytes[$0] == 10 && $0 + 1 < bytes.count && bytes[$0 + 1] == 10 }
        let head = String(decoding: bytes[..<(split ?? bytes.count)], as: UTF8.self)
        let body = split.map { Array(bytes[($0 + 2)...]) } ?? []
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let path = lines.isEmpty ? "/" : lines.removeFirst()
        var headers = HTTPHeaders()
        for line in lines {
            // What NIO's HTTP parser hands over: header names are ASCII tokens.
            guard let colon = line.firstIndex(of: ":"), line[..<colon].utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { continue }
            headers.add(name: String(line[..<colon]), value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let request = ServerRequest(method: .POST, uri: path, headers: headers, body: ByteBuffer(bytes: body))
        guard let message = try? RelayRequest.parse(request, now: Date(timeIntervalSince1970: 1_700_000_000)) else { return false }
        _ = RelayPayload.encode(body: message.body, senderKey: message.senderKey, salt: message.salt, extra: message.extra)
        return true
    }
}
