import HeraldCore
import Pushkins

/// Reads a registration signal (docs/adamant.md, "Registration"): a chat transaction of type 3 to
/// the service's address, whose message decrypts to `{"token", "provider", "action"}`.
enum SignalDecoder {
    enum Rejection: Error, Equatable, CustomStringConvertible {
        case notASignal
        case senderMismatch
        case undecryptable
        case notJSON
        case badToken
        case unknownProvider(String)
        case unknownAction(String)

        var description: String {
            switch self {
            case .notASignal: return "not a signal to this service"
            case .senderMismatch: return "senderId is not the address of senderPublicKey"
            case .undecryptable: return "the message does not decrypt"
            case .notJSON: return "the message is not a JSON object"
            case .badToken: return "the token is not hex"
            case .unknownProvider(let p): return "unknown provider '\(p)'"
            case .unknownAction(let a): return "unknown action '\(a)'"
            }
        }
    }

    static func decode(_ transaction: AdamantTransaction, service: AdamantKeys) throws(Rejection) -> DeviceChange {
        guard let chat = transaction.chat, chat.type == 3, transaction.recipientId == service.address else { throw .notASignal }
        guard let senderKey = [UInt8](hexString: transaction.senderPublicKey), senderKey.count == 32,
            AdamantKeys.address(publicKey: senderKey) == transaction.senderId
        else { throw .senderMismatch }
        guard let ciphertext = [UInt8](hexString: chat.message), let nonce = [UInt8](hexString: chat.ownMessage),
            let plaintext = try? AdamantBox.open(ciphertext, nonce: nonce, senderPublic: senderKey, recipientPrivate: service.privateKey)
        else { throw .undecryptable }
        guard let json = try? JSONParser.parse(plaintext), json.objectValue != nil else { throw .notJSON }
        guard let token = json["token"]?.stringValue?.lowercased(), !token.isEmpty, token.count <= 200,
            token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { throw .badToken }
        let providerText = json["provider"]?.stringValue ?? ""
        guard let provider = AdamantProvider(rawValue: providerText) else { throw .unknownProvider(providerText) }
        switch json["action"]?.stringValue?.lowercased() {
        case "add": return DeviceChange(address: transaction.senderId, token: token, action: .add(provider))
        case "remove": return DeviceChange(address: transaction.senderId, token: token, action: .remove)
        case let other: throw .unknownAction(other ?? "(none)")
        }
    }
}
