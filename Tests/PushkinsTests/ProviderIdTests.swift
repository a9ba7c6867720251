import Testing

@testable import Pushkins

/// The provider's id for an accepted message, as the delivery trace shows it: FCM's `name`,
/// Huawei's `requestId`, read from the answer by a scan.
@Suite struct ProviderIdTests {
    @Test func theFieldIsReadFromTheAnswer() {
        let fcm = Array(#"{"name": "projects/herald/messages/0:1700000000%31"}"#.utf8)
        #expect(HTTPProvider.stringField("name", in: fcm) == "projects/herald/messages/0:1700000000%31")
        let hms = Array(#"{"code":"80000000","msg":"Success","requestId":"171234567890123456789"}"#.utf8)
        #expect(HTTPProvider.stringField("requestId", in: hms) == "171234567890123456789")
        #expect(HTTPProvider.stringField("requestId", in: fcm) == nil)
        #expect(HTTPProvider.stringField("name", in: Array(#"{"name": 3}"#.utf8)) == nil)
        #expect(HTTPProvider.stringField("name", in: Array(#"{"name": "a\"b"}"#.utf8)) == nil)
        #expect(HTTPProvider.stringField("name", in: Array(#"{"name": "unterminated"#.utf8)) == nil)
        // A key that is only a prefix or a suffix of another is not it; the answer may end at the key.
        #expect(HTTPProvider.stringField("name", in: Array(#"{"names": "x", "rename": "y", "name":"z"}"#.utf8)) == "z")
        #expect(HTTPProvider.stringField("name", in: Array(#"{"name""#.utf8)) == nil)
    }

    /// A body that is not contiguous in memory is read the same, through a copy.
    @Test func aBodyInPiecesIsReadTheSame() {
        let fcm = #"{"name": "projects/herald/messages/0:1700000000%31"}"#.utf8.lazy.map { $0 }
        #expect(HTTPProvider.stringField("name", in: fcm) == "projects/herald/messages/0:1700000000%31")
        #expect(HTTPProvider.stringField("requestId", in: fcm) == nil)
    }
}
