import Testing

@testable import Pushkins

/// `origin_class` of a push service's pushback: its kind, never its host.
@Suite struct PushServiceKindTests {
    @Test func theKindIsNamedByTheHostsDomain() {
        #expect(PushServiceKind.of(origin: "https://updates.push.services.mozilla.com") == "mozilla")
        #expect(PushServiceKind.of(origin: "https://fcm.googleapis.com") == "google")
        #expect(PushServiceKind.of(origin: "https://web.push.apple.com:443") == "apple")
        #expect(PushServiceKind.of(origin: "https://ntfy.sh") == "ntfy")
        #expect(PushServiceKind.of(origin: "http://127.0.0.1:8080") == "other")
        #expect(PushServiceKind.of(origin: "https://notntfy.sh") == "other")
    }
}
