import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

@Suite struct GlobTests {
    @Test func sygnalExamples() {
        #expect(Glob("*.example.*").matches("com.example.bpns"))
        #expect(Glob("com.example.a*").matches("com.example.apns2"))
        #expect(Glob("*.example.*").matches("com.example.apns2"))
        #expect(!Glob("com.example.a*").matches("com.example.bpns"))
    }

    @Test func starMatchesAnyRunIncludingDotsAndNothing() {
        #expect(Glob("a*b").matches("ab"))
        #expect(Glob("a*b").matches("a.x.y.b"))
        #expect(!Glob("a*b").matches("a.x.y.bc"))
    }

    @Test func questionMarkMatchesExactlyOne() {
        #expect(Glob("a?c").matches("abc"))
        #expect(!Glob("a?c").matches("ac"))
        #expect(Glob("?*?").matches("ab"))
        #expect(!Glob("?*?").matches("a"))
    }

    @Test func dotIsLiteralAndMatchIsAnchoredAndCaseSensitive() {
        #expect(!Glob("com.example").matches("comXexample"))
        #expect(!Glob("example").matches("com.example"))
        #expect(!Glob("Com.example").matches("com.example"))
        #expect(Glob("Com.Example:*", caseInsensitive: true).matches("com.example:8080"))
    }
}
