package import HeraldCore

/// The fields of a node's transaction that the service reads.
package struct AdamantTransaction: Sendable, Equatable {
    package var id: String
    package var height: Int64
    /// 0 transfer, 8 chat.
    package var type: Int
    /// Seconds since the ADAMANT epoch (2017-09-02T17:00:00Z).
    package var timestamp: Int64
    package var senderId: String
    package var senderPublicKey: String
    package var recipientId: String
    /// `asset.chat`: chat type (1 message, 2 rich, 3 signal…), and the hex ciphertext and nonce.
    package var chat: Chat?

    package struct Chat: Sendable, Equatable {
        package var type: Int
        package var message: String
        package var ownMessage: String

        package init(type: Int, message: String, ownMessage: String) {
            self.type = type
            self.message = message
            self.ownMessage = ownMessage
        }
    }

    package init(
        id: String, height: Int64, type: Int, timestamp: Int64, senderId: String, senderPublicKey: String, recipientId: String,
        chat: Chat? = nil
    ) {
        self.id = id
        self.height = height
        self.type = type
        self.timestamp = timestamp
        self.senderId = senderId
        self.senderPublicKey = senderPublicKey
        self.recipientId = recipientId
        self.chat = chat
    }

    /// Reads one transaction object; nil when a field the service needs is missing.
    package init?(_ json: JSONValue) {
        guard let id = json["id"]?.stringValue, !id.isEmpty, let height = json["height"]?.pythonInt,
            let type = json["type"]?.pythonInt, let senderId = json["senderId"]?.stringValue
        else { return nil }
        self.id = id
        self.height = height
        self.type = Int(type)
        self.timestamp = json["timestamp"]?.pythonInt ?? 0
        self.senderId = senderId
        self.senderPublicKey = json["senderPublicKey"]?.stringValue ?? ""
        self.recipientId = json["recipientId"]?.stringValue ?? ""
        if let chat = json["asset"]?["chat"], let chatType = chat["type"]?.pythonInt {
            self.chat = Chat(
                type: Int(chatType), message: chat["message"]?.stringValue ?? "", ownMessage: chat["own_message"]?.stringValue ?? "")
        }
    }

    /// The JSON a node answers with (for the fake node and tests).
    package var json: JSONValue {
        var object: JSONObject = [
            "id": .string(id), "height": .int(height), "blockId": .string("\(height)0"), "type": .int(Int64(type)),
            "block_timestamp": .int(timestamp), "timestamp": .int(timestamp), "senderPublicKey": .string(senderPublicKey),
            "senderId": .string(senderId), "recipientId": .string(recipientId), "amount": .int(type == 0 ? 100_000_000 : 0),
            "fee": .int(type == 0 ? 50_000_000 : 100_000), "signature": .string(String(repeating: "0", count: 128)), "signatures": [],
            "confirmations": 1,
        ]
        if let chat {
            object["asset"] = [
                "chat": ["message": .string(chat.message), "own_message": .string(chat.ownMessage), "type": .int(Int64(chat.type))]
            ]
        } else {
            object["asset"] = .object([:])
        }
        return .object(object)
    }

    /// Chain order: height, then timestamp, then id.
    package static func chainOrder(_ a: AdamantTransaction, _ b: AdamantTransaction) -> Bool {
        if a.height != b.height { return a.height < b.height }
        if a.timestamp != b.timestamp { return a.timestamp < b.timestamp }
        return a.id < b.id
    }
}
