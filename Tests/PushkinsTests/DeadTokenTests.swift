import Testing

@testable import HeraldCore

/// "This token is dead" is decided once, from the outcome a pushkin classified: the relay, Status
/// and ADAMANT read it there (docs/architecture.md, "Errors").
@Suite struct DeadTokenTests {
    @Test func theProviderSaysATokenIsDeadOnlyForAnswersAboutTheToken() {
        let dead: [DeviceOutcome] = [
            .rejected(reason: .apns(status: 410, .unregistered)), .rejected(reason: .apns(status: 410, .expiredToken)),
            .rejected(reason: .apns(status: 400, .badDeviceToken)), .rejected(reason: .apns(status: 400, .deviceTokenNotForTopic)),
            .rejected(reason: .fcm(status: 404, .unregistered)), .rejected(reason: .fcmLegacy(.notRegistered, status: 200)),
            .rejected(reason: .pushService(status: 410)),
        ]
        for outcome in dead {
            #expect(outcome.providerSaysTokenIsDead, "\(outcome)")
            #expect(outcome.tokenShouldBeDropped, "\(outcome)")
        }
        let alive: [DeviceOutcome] = [
            .delivered, .rejected(reason: .apns(status: 400, .topicDisallowed)), .failed(reason: .apns(status: 410, .unregistered)),
            .rejected(reason: .unknownAppId), .dropped(reason: .payloadTooLarge), .failed(reason: .network("refused")),
        ]
        for outcome in alive {
            #expect(!outcome.providerSaysTokenIsDead, "\(outcome)")
            #expect(!outcome.tokenShouldBeDropped, "\(outcome)")
        }
        // Herald's own refusal of a pushkey: forgotten, but not on the provider's word.
        let refused = DeviceOutcome.rejected(reason: .invalidPushkey("not hex"))
        #expect(!refused.providerSaysTokenIsDead && refused.tokenShouldBeDropped)
    }
}
