import Foundation
import HeraldCore
import HeraldHTTPServer
import NIOCore
import NIOHTTP1
import Pushkins

/// A Web Push message to relay, read from the request: where it goes, its encryption parameters,
/// and the APNs headers its Web Push headers map to (docs/webpush-relay.md, "Requests").
struct RelayRequest: Equatable {
    enum Environment: Equatable {
        case production
        case development
    }

    var environment: Environment
    /// Lowercase hex.
    var deviceToken: String
    var extra: String?
    var body: [UInt8]
    /// `aesgcm` only: the sender's public key (`Crypto-Key: dh=`) and the salt (`Encryption: salt=`).
    var senderKey: [UInt8]?
    var salt: [UInt8]?
    var priority: Int
    /// `apns-expiration`: nil when `TTL` is absent or not a number.
    var expiration: Int?
    var collapseId: String?

    static let prefix = "/relay-to/"

    /// Reads `POST /relay-to/{environment}/{token}[/{extra…}]` and its headers.
    static func parse(_ request: ServerRequest, now: Date) throws(RelayError) -> RelayRequest {
        let path = request.path
        let parts = path.dropFirst(prefix.count).split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard path.hasPrefix(prefix), parts.count >= 2 else { throw .unknownEnvironment(parts.first ?? "") }
        let environment: Environment
        switch parts[0] {
        case "production": environment = .production
        case "development", "sandbox": environment = .development
        default: throw .unknownEnvironment(parts[0])
        }
        let token = parts[1].lowercased()
        guard (64...200).contains(token.utf8.count), token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { throw .badDeviceToken }
        let extra = parts.count > 2 ? (parts[2].removingPercentEncoding ?? parts[2]) : nil

        let body = Array(request.body.readableBytesView)
        var message = RelayRequest(
            environment: environment, deviceToken: token, extra: extra, body: body, senderKey: nil, salt: nil,
            priority: priority(request.headers.first(name: "urgency")),
            expiration: expiration(request.headers.first(name: "ttl"), now: now),
            collapseId: request.headers.first(name: "topic").flatMap { $0.isEmpty ? nil : APNsPushkin.collapseId($0) })

        let encoding = request.headers[canonicalForm: "content-encoding"].map(String.init).joined(separator: ",")
        switch encoding.trimmingCharacters(in: .whitespaces).lowercased() {
        case "aesgcm":
            let keys = try parameters(request.headers, "Crypto-Key")
            let encryption = try parameters(request.headers, "Encryption")
            guard let dh = keys["dh"] else { throw .malformedHeader("Crypto-Key has no dh parameter") }
            guard let salt = encryption["salt"] else { throw .malformedHeader("Encryption has no salt parameter") }
            guard let key = Base64URL.decode(dh), key.count == 65, key.first == 0x04 else {
                throw .malformedHeader("Crypto-Key dh is not a base64url uncompressed P-256 point")
            }
            guard let saltBytes = Base64URL.decode(salt), saltBytes.count == 16 else {
                throw .malformedHeader("Encryption salt is not 16 bytes of base64url")
            }
            guard body.count >= 18 else { throw .malformedBody("An aesgcm body holds at least 18 bytes") }
            message.senderKey = key
            message.salt = saltBytes
        case "aes128gcm":
            // The salt, record size and sender key are in the body's header (RFC 8188).
            guard body.count >= 21, body.count >= 21 + Int(body[20]) + 17 else {
                throw .malformedBody("The body is not an aes128gcm message")
            }
        default:
            throw .unsupportedEncoding(encoding.isEmpty ? "(none)" : encoding)
        }
        return message
    }

    /// `Urgency: very-low` or `low` (any case) is APNs priority 5; anything else 10.
    static func priority(_ urgency: String?) -> Int {
        switch urgency?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "very-low", "low": return 5
        default: return 10
        }
    }

    /// `TTL: n` is now + n seconds; `TTL: 0` is APNs' 0 (deliver once, do not store); absent or not
    /// a non-negative number: no expiration header.
    static func expiration(_ ttl: String?, now: Date) -> Int? {
        guard let ttl = ttl.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), ttl >= 0 else { return nil }
        return ttl == 0 ? 0 : Int(now.timeIntervalSince1970) + ttl
    }

    /// `name=value` parameters of every line of a header, separated by `;` or `,`, spaces allowed,
    /// values optionally quoted; the first of each name counts. An entry without `=` is malformed.
    static func parameters(_ headers: HTTPHeaders, _ name: String) throws(RelayError) -> [String: String] {
        var result: [String: String] = [:]
        for line in headers[canonicalForm: name] {
            for entry in line.split(whereSeparator: { $0 == ";" || $0 == "," }) {
                let trimmed = entry.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty { continue }
                guard let equals = trimmed.firstIndex(of: "=") else { throw .malformedHeader("\(name) has an entry without '='") }
                let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                var value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                if result[key] == nil { result[key] = value }
            }
        }
        return result
    }
}
