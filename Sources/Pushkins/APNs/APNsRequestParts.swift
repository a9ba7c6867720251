import NIOCore
import NIOHTTP1

/// What every attempt of one APNs request carries, worked out once before the first: the target,
/// the payload's bytes and Apple's header values (docs/compatibility/apns.md).
struct APNsRequestParts: Sendable {
    var path: String
    var body: ByteBuffer
    var topic: String
    var priority: Int?
    var pushType: String
    var id: String
    var expiration: Int?
    var collapseId: String?

    /// The attempt's headers, in one storage with the provider token's `authorization` (its
    /// value, `bearer` and the token, made once per token); nil for a certificate's connection.
    func headers(authorization: String?) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(8)
        headers.add(name: "apns-topic", value: topic)
        if let priority { headers.add(name: "apns-priority", value: String(priority)) }
        headers.add(name: "apns-push-type", value: pushType)
        if let expiration { headers.add(name: "apns-expiration", value: String(expiration)) }
        if let collapseId { headers.add(name: "apns-collapse-id", value: collapseId) }
        headers.add(name: "apns-id", value: id)
        headers.add(name: "content-type", value: "application/json")
        if let authorization { headers.add(name: "authorization", value: authorization) }
        return headers
    }
}
