import Foundation
import Testing

@testable import HeraldCore
@testable import HeraldUpstream
@testable import Pushkins

@Suite struct UUIDTextTests {
    @Test func matchesFoundationsTextInLowercase() {
        let fixed = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(fixed?.lowercasedString == "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
        for _ in 0..<1000 {
            let id = UUID()
            #expect(id.lowercasedString == id.uuidString.lowercased())
        }
    }
}
