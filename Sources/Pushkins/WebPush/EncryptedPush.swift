import FoundationEssentials
import HeraldCore
import NIOCore
import NIOHTTP1

/// One encrypted Web Push message as a push service takes it (RFC 8030 §5, RFC 8291, RFC 8292):
/// the `aes128gcm` body and its headers. `type: webpush` and `type: unifiedpush` both send through
/// it: a UnifiedPush distributor is a Web Push service (docs/compatibility/unifiedpush.md).
struct EncryptedPush {
    /// A subscription's keys: the user agent's P-256 public key and its 16-byte auth secret.
    struct Keys {
        let p256dh: [UInt8]
        let authSecret: [UInt8]

        /// From their base64url text; nil when either is not what RFC 8291 says.
        init?(p256dh: String, auth: String) {
            guard let key = Base64URL.decode(p256dh), key.count == 65, let secret = Base64URL.decode(auth), secret.count == 16 else {
                return nil
            }
            self.p256dh = key
            self.authSecret = secret
        }
    }

    /// `Urgency` (RFC 8030 §5.3).
    enum Urgency: String {
        case low, normal, high
    }

    let body: ByteBuffer
    let headers: HTTPHeaders

    /// `plaintext` encrypted for `keys`, signed for `origin` when there is a signer; `topic` is the
    /// message's `Topic`, when it replaces an earlier one.
    init(
        _ plaintext: consuming [UInt8], for keys: Keys, vapid: VAPIDSigner?, origin: String, now: Date, ttl: Int, urgency: Urgency,
        topic: String? = nil
    ) throws {
        body = try WebPushEncryption.encryptedBody(plaintext, p256dh: keys.p256dh, authSecret: keys.authSecret)
        var headers = HTTPHeaders()
        headers.reserveCapacity(6)  // the five below and `Topic`
        if let vapid { headers.add(name: "Authorization", value: try vapid.authorization(origin: origin, now: now)) }
        headers.add(name: "TTL", value: String(ttl))
        headers.add(name: "Urgency", value: urgency.rawValue)
        headers.add(name: "Content-Encoding", value: "aes128gcm")
        headers.add(name: "Content-Type", value: "application/octet-stream")
        if let topic { headers.add(name: "Topic", value: topic) }
        self.headers = headers
    }
}
