import Crypto
import Foundation
import HeraldCore
import HeraldUpstream
import NIOCore
import NIOHTTP1
import NIOSSL
import Pushkins

/// What the fake APNs, FCM and Web Push service sustain on their own: `concurrency` requests kept
/// in flight for `seconds` by Herald's own transports (the APNs request over HTTP/2 with a
/// provider token, an FCM legacy request, a push message's POST), with no gateway in between.
/// The benchmark prints it next to Herald's rows, so the fakes are shown not to be the ceiling.
/// The driver shares the cores with the fake, so this is a floor of what the fake alone could do.
enum FakeCeiling {
    static func drive(target: String, directory: String, seconds: Double, concurrency: Int) async throws -> Double {
        let fakes = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/fakes.json"))))
        let transport: any UpstreamTransport
        let request: @Sendable () throws -> UpstreamRequest
        switch target {
        case "apns":
            let apns = fakes["apns"]
            let base = apns?["base_url"]?.stringValue ?? ""
            var settings = UpstreamSettings()
            settings.trustedCAFiles = [apns?["ca_file"]?.stringValue ?? ""]
            transport = try HTTP2Upstream(origin: base, settings: settings, tls: .makeClientConfiguration())
            let key = try P256.Signing.PrivateKey(
                pemRepresentation: String(contentsOfFile: apns?["keyfile"]?.stringValue ?? "", encoding: .utf8))
            let tokens = APNsProviderToken(
                key: key, keyId: apns?["key_id"]?.stringValue ?? "", teamId: apns?["team_id"]?.stringValue ?? "",
                clock: SystemClock())
            let topic = apns?["topic"]?.stringValue ?? ""
            request = {
                var headers = HTTPHeaders()
                headers.add(name: "apns-topic", value: topic)
                headers.add(name: "apns-push-type", value: "alert")
                headers.add(name: "authorization", value: try tokens.authorization())
                return UpstreamRequest(
                    url: "\(base)/3/device/\(String(repeating: "ab", count: 32))", headers: headers,
                    body: ByteBuffer(string: #"{"aps":{"alert":"ceiling"}}"#))
            }
        case "fcm":
            let fcm = fakes["fcm"]
            let base = fcm?["base_url"]?.stringValue ?? ""
            transport = try HTTP1Upstream(origin: base, settings: UpstreamSettings(maxConnections: concurrency), clock: nil)
            let key = fcm?["legacy_api_key"]?.stringValue ?? ""
            request = {
                var headers = HTTPHeaders()
                headers.add(name: "Authorization", value: "key=\(key)")
                headers.add(name: "Content-Type", value: "application/json")
                return UpstreamRequest(
                    url: "\(base)/fcm/send", headers: headers, body: ByteBuffer(string: #"{"to":"ceiling","data":{"a":"b"}}"#))
            }
        case "webpush":
            // The benchmark's push service does not record, so it answers without decrypting: the
            // body only has to be the size of Herald's (one aes128gcm record of a short payload).
            let subscription = fakes["webpush"]?["subscriptions"]?.arrayValue?.first
            let endpoint = subscription?["endpoint"]?.stringValue ?? ""
            let base = fakes["webpush"]?["base_url"]?.stringValue ?? ""
            transport = try HTTP1Upstream(origin: base, settings: UpstreamSettings(maxConnections: concurrency), clock: nil)
            let body = [UInt8](repeating: 0x5A, count: 300)
            request = {
                var headers = HTTPHeaders()
                headers.add(name: "Content-Encoding", value: "aes128gcm")
                headers.add(name: "TTL", value: "86400")
                headers.add(name: "Authorization", value: "vapid t=ceiling, k=ceiling")
                return UpstreamRequest(url: endpoint, headers: headers, body: ByteBuffer(bytes: body))
            }
        default:
            throw CeilingError(description: "unknown target \(target): apns, fcm or webpush")
        }
        let end = ContinuousClock.now + .seconds(seconds)
        let started = ContinuousClock.now
        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var count = 0
                    while ContinuousClock.now < end {
                        let response = try await transport.send(request())
                        if response.status == 200 || response.status == 201 { count += 1 }
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = ContinuousClock.now - started
        if let http2 = transport as? HTTP2Upstream { await http2.shutdown() }
        if let http1 = transport as? HTTP1Upstream { await http1.shutdown() }
        return Double(answered) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    struct CeilingError: Error, CustomStringConvertible {
        var description: String
    }
}
