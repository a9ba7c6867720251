import Foundation
import HeraldCore
import SwiftProtobuf

/// What a push request's item becomes: status-go's filters, the texts and what goes to gorush
/// (docs/status-protocol.md).
extension StatusServer {
    /// status-go's filters (docs/status-protocol.md): a filtered notification is reported as a success
    /// but not sent, so that blocking stays private.
    static func allows(_ item: PushItem, _ registration: Registration) -> Bool {
        let author = item.author
        let chat = item.chatID
        let blocked = registration.blockedChatList.contains(author)
        switch item.type {
        case .message:
            return !registration.blockedChatList.contains(chat) && !registration.mutedChatList.contains(chat) && !blocked
        case .mention:
            return !registration.blockMentions && registration.allowedMentionsChatList.contains(chat) && !blocked
        case .requestToJoinCommunity:
            return !blocked
        default:
            return true
        }
    }

    /// The text gorush shows for each type (docs/status-protocol.md).
    static func text(for type: PushItem.PushNotificationType) -> String {
        switch type {
        case .message: return "You have a new message"
        case .requestToJoinCommunity: return "Someone requested to join a community you are an admin of"
        default: return "Someone mentioned you"
        }
    }

    /// What status-go's push server posts to gorush for one device (docs/status-protocol.md, "What
    /// is sent"): the text, the encrypted message and its chat and key as `data`, and for an APNs
    /// token a visible, audible push the app may wake for (`content_available`, `sound: default`,
    /// `priority: high`, `push_type: alert`) with a `deepLink` to the chats or the activity centre.
    static func notification(for item: PushItem, platform: StatusPlatform, topic: String) -> GorushNotification {
        var notification = GorushNotification()
        notification.platform = platform.number
        notification.message = text(for: item.type)
        // Room for the three keys and iOS's `deepLink`; each text made in one string with its `0x`.
        var data = JSONObject(minimumCapacity: 4)
        data["encryptedMessage"] = .string(Hex.encode(item.message, prefix: "0x"))
        data["chatId"] = .string(Hex.encode(item.chatID, prefix: "0x"))
        data["publicKey"] = .string(Hex.encode(item.publicKey, prefix: "0x"))
        notification.data = data
        guard platform == .ios else { return notification }
        notification.topic = topic
        notification.contentAvailable = true
        notification.sound = "default"
        notification.priority = "high"
        notification.pushType = "alert"
        notification.data["deepLink"] = .string(item.type == .message ? "status-app://chats" : "status-app://ac")
        return notification
    }
}
