import HeraldCore
import Pushkins
import Testing

@testable import StatusAdapter

/// gorush's Huawei fields (docs/status-protocol.md, "gorush's fields"): what the Android API's
/// `message.android` and `message.data` become.
@Suite struct GorushHMSMappingTests {
    @Test func huaweiFieldsBecomeTheAndroidConfigGorushSends() throws {
        let notification = try GorushNotification([
            "tokens": ["h-1"], "platform": 3, "title": "Alice", "message": "Hello", "image": "https://example.org/i.png",
            "priority": "high", "category": "IM", "huawei_collapse_key": 2, "huawei_ttl": "600s", "bi_tag": "status",
            "fast_app_target": 1, "huawei_data": #"{"chatId":"0x1"}"#,
            "huawei_notification": ["channel_id": "chats", "tag": "t"],
        ])
        let message = GorushHMS.message(notification, token: "h-1")
        #expect(message.token == "h-1")
        #expect(message.dataText == #"{"chatId":"0x1"}"#)
        #expect(
            message.android == [
                "urgency": "HIGH", "collapse_key": 2, "category": "IM", "ttl": "600s", "bi_tag": "status", "fast_app_target": 1,
                "notification": [
                    "channel_id": "chats", "tag": "t", "click_action": ["type": 3], "body": "Hello", "title": "Alice",
                    "image": "https://example.org/i.png", "default_sound": true,
                ],
            ])
    }

    @Test func withoutHuaweiFieldsTheMessageIsNormalUrgencyWithItsSound() throws {
        let notification = try GorushNotification(["tokens": ["h-1"], "platform": 3, "message": "Hello", "sound": "ding"])
        let message = GorushHMS.message(notification, token: "h-1")
        #expect(message.dataText == nil)  // Herald's data map then, as JSON text
        #expect(message.android == ["urgency": "NORMAL", "notification": ["click_action": ["type": 3], "body": "Hello", "sound": "ding"]])
    }
}
