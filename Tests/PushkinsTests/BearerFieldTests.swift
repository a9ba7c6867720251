import Testing

@testable import Pushkins

@Suite struct BearerFieldTests {
    /// A token's field is made once and kept until another token comes; the field always names the
    /// token it was asked for.
    @Test func aTokensFieldIsKeptUntilTheTokenChanges() {
        let bearer = BearerField()
        let first = bearer.value(for: "ya29.first")
        #expect(first == "Bearer ya29.first")
        #expect(bearer.value(for: "ya29.first") == first)
        #expect(bearer.value(for: "ya29.second") == "Bearer ya29.second")
        #expect(bearer.value(for: "ya29.first") == "Bearer ya29.first")
    }
}
