import Foundation
import SwiftProtobuf

typealias AMM = Protobuf_ApplicationMetadataMessage
typealias Registration = Protobuf_PushNotificationRegistration
typealias RegistrationResponse = Protobuf_PushNotificationRegistrationResponse
typealias Query = Protobuf_PushNotificationQuery
typealias QueryInfo = Protobuf_PushNotificationQueryInfo
typealias QueryResponse = Protobuf_PushNotificationQueryResponse
typealias PushRequest = Protobuf_PushNotificationRequest
typealias PushItem = Protobuf_PushNotification
typealias PushReport = Protobuf_PushNotificationReport
typealias PushResponse = Protobuf_PushNotificationResponse

/// The envelope: `WrapMessageV1` and `RecoverKey` of status-go (docs/status-protocol.md, "Envelope").
package enum StatusEnvelope {
    /// Serialises `message` as the payload of an AMM of `type`, signed by `key` over Keccak256(payload).
    static func wrap(_ message: some SwiftProtobuf.Message, type: AMM.TypeEnum, key: Secp256k1.PrivateKey) throws -> [UInt8] {
        try wrap(payload: [UInt8](message.serializedData()), type: type, key: key)
    }

    package static func wrap(payload: [UInt8], type rawType: Int, key: Secp256k1.PrivateKey) throws -> [UInt8] {
        try wrap(payload: payload, type: AMM.TypeEnum(rawValue: rawType) ?? .UNRECOGNIZED(rawType), key: key)
    }

    static func wrap(payload: [UInt8], type: AMM.TypeEnum, key: Secp256k1.PrivateKey) throws -> [UInt8] {
        var amm = AMM()
        amm.payload = Data(payload)
        amm.type = type
        amm.signature = Data(try key.signature(forDigest: Keccak.keccak256(payload)))
        return [UInt8](try amm.serializedData())
    }

    /// A parsed envelope: its type, payload and the key that signed it.
    package struct Opened: Sendable {
        package let type: Int
        package let payload: [UInt8]
        package let signer: Secp256k1.PublicKey
    }

    package static func open(_ bytes: [UInt8]) throws(StatusRequestError) -> Opened {
        guard let amm = try? AMM(serializedBytes: bytes) else { throw .notProtobuf }
        guard amm.signature.count == 65 else { throw .badSignature("a 65-byte signature is required") }
        let payload = [UInt8](amm.payload)
        guard let signer = try? Secp256k1.PublicKey.recover(signature: [UInt8](amm.signature), digest: Keccak.keccak256(payload)) else {
            throw .badSignature("the signature does not recover a key")
        }
        return Opened(type: amm.type.rawValue, payload: payload, signer: signer)
    }
}

/// Why a native request gets an HTTP error instead of a Status response.
package enum StatusRequestError: Error, Equatable, Sendable {
    case notProtobuf
    case badSignature(String)
    case unsupportedType(Int)
    case malformedPayload(String)
    case missingMessageId
    /// Nothing could be dispatched (no push app reachable): try again later.
    case dispatchUnavailable(String)
    case internalError(String)

    package var statusCode: Int {
        switch self {
        case .dispatchUnavailable: return 502
        case .internalError: return 500
        default: return 400
        }
    }

    package var errcode: String {
        switch self {
        case .notProtobuf: return "M_NOT_PROTOBUF"
        case .badSignature: return "M_BAD_SIGNATURE"
        case .unsupportedType: return "M_UNRECOGNIZED"
        case .malformedPayload: return "M_BAD_PROTOBUF"
        case .missingMessageId: return "M_MISSING_PARAM"
        case .dispatchUnavailable, .internalError: return "M_UNKNOWN"
        }
    }

    package var message: String {
        switch self {
        case .notProtobuf: return "Body is not an ApplicationMetadataMessage"
        case .badSignature(let why): return "Invalid signature: \(why)"
        case .unsupportedType(let t): return "Message type \(t) is not handled here (expected 16, 18 or 20)"
        case .malformedPayload(let why): return "Malformed payload: \(why)"
        case .missingMessageId: return "Push notification request has no message_id"
        case .dispatchUnavailable(let why): return "No notification could be dispatched: \(why)"
        case .internalError(let why): return "Internal error: \(why)"
        }
    }
}
