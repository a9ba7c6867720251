import Testing

@testable import HeraldUpstream

/// Which protocol an origin is spoken to in, as a value (`ProtocolChoice`).
@Suite struct ProtocolChoiceTests {
    @Test func anHTTPSOriginTriesHTTP2UntilTheServerRefusesItThenStaysOnHTTP1() {
        var choice = ProtocolChoice(offersHTTP2: true)
        #expect(choice.spoken == .unknown && choice.triesHTTP2)
        choice.refusedHTTP2()
        #expect(choice.spoken == .http1 && !choice.triesHTTP2)
        choice.answeredOverHTTP2()  // a stream answered on the old connection changes nothing
        #expect(choice.spoken == .http1)
    }

    @Test func anAnswerOverHTTP2SettlesIt() {
        var choice = ProtocolChoice(offersHTTP2: true)
        choice.answeredOverHTTP2()
        #expect(choice.spoken == .http2 && choice.triesHTTP2)
    }

    @Test func anOriginThatCannotBeOfferedHTTP2StartsOnHTTP1() {
        let choice = ProtocolChoice(offersHTTP2: false)
        #expect(choice.spoken == .http1 && !choice.triesHTTP2)
    }
}
